"""Orchestration of one run: plan, then per stream: read a pass, ship it, commit, until none is left.
No HTTP, formatting or storage details live here: those come in through the small interfaces of
reading, normalize, sinks and state."""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import stop
from .delivery.claims import Claims
from .delivery.journal import Journal
from .delivery.shipper import FLUSH_TIMEOUT_S, LINGER_S, Outcome, Shipper
from .errors import ForwarderError, StreamFailed
from .events import Event
from .logs import redact
from .normalize import Formatter, NormalizeOptions
from .observer import IGNORE, RunObserver
from .quarantine import Quarantine, unplaceable
from .reading.pass_ import RecordSource, read_pass, start_position
from .reading.select import Limits
from .records import AuditRecord
from .report import RunReport, StreamReport
from .sinks.base import Sink
from .state.model import FUTURE_SKEW_US, StreamState
from .state.store import Lease, StateStore
from .stop import Stopped
from .streams import Stream
from .timeutil import format_us, now_us

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    source: RecordSource
    store: StateStore
    sink: Sink
    formatter: Callable[[], Formatter]  # asked for by each pass with records: an idle run loads none
    quarantine: Quarantine
    limits: Limits
    claims: Claims  # which stream ships a record that several return (delivery/claims.py)
    options: NormalizeOptions  # ingest time is replaced per pass
    lease: Optional[Lease] = None
    lease_ttl_s: int = 900
    should_stop: Callable[[], bool] = lambda: False
    observer: RunObserver = IGNORE
    # Told the records each pass hands to the sink (the scheduler learns the actors they name).
    on_records: Callable[[Stream, Sequence[AuditRecord]], None] = lambda stream, records: None
    linger_s: float = LINGER_S  # a partly filled batch waits this long for other streams' events
    flush_timeout_s: float = FLUSH_TIMEOUT_S  # the end of a run waits this long for batches in flight
    shipper: Optional[Shipper] = None  # the run's shared batches, while run_streams runs
    # How far behind the watermark a stream's first pass reads: None, the tie margin (a poll); a
    # scheduler asks for more (say a day) for a deep re-sweep that finds records that came late.
    reach_back_s: Optional[int] = None
    # One renewal at a time: stream threads renew between streams, and a second renewal racing the
    # first would present the version the first replaced and wrongly learn that the lease was lost.
    lease_lock: threading.Lock = field(default_factory=threading.Lock)
    lease_renewed: float = field(default_factory=time.monotonic)

    def renew_lease(self) -> None:
        """Extend the lease once a third of its life has passed; LeaseHeld if it was lost. Not once a
        stop is requested (the write would be refused): two thirds of its life are left to end in."""
        if self.lease is None or stop.requested():
            return
        with self.lease_lock:
            if time.monotonic() - self.lease_renewed >= self.lease_ttl_s / 3:
                self.lease.renew()
                self.lease_renewed = time.monotonic()


def run_stream(ctx: RunContext, stream: Stream) -> StreamReport:
    """Read, ship and commit ``stream`` pass by pass until it has nothing new (or a stop). The report
    is this thread's alone: in a run's shared batches, what the shipper does for the stream is merged
    into it by ``run_streams`` once this thread is done and the batches are settled."""
    report = StreamReport(stream.key)
    state: Optional[StreamState] = None
    try:
        loaded = ctx.store.load(stream.key)
        state, version = loaded.state, loaded.version  # never lowered, whatever our clock says
        floor_us = now_us() - ctx.limits.initial_lookback_s * 1_000_000
        at = start_position(state, floor_us, ctx.limits, ctx.reach_back_s)
        first_us = at.start_us if at.start_us is not None else floor_us
        ctx.observer.progressed(report, first_us, first_us)
        position: Tuple[Any, ...] = ()
        kept: Dict[str, int] = {}  # quarantine ids of the unplaceable records this run wrote -> when
        while True:
            report.passes += 1
            fetched_before = report.fetched
            progressed = functools.partial(
                _progressed, ctx.observer, report, fetched_before, first_us, state.watermark_us or first_us
            )
            read = read_pass(
                ctx.source,
                stream,
                state,
                ctx.limits,
                floor_us=floor_us,
                keeps=ctx.claims.keeps,
                at=at,
                on_page=progressed,
            )
            report.fetched, report.skipped = fetched_before + read.fetched, report.skipped + read.skipped
            report.api_calls += read.calls
            report.late += read.late
            report.truncated = report.truncated or read.truncated
            report.strategy = read.strategy or report.strategy
            for raw, reason in read.unplaceable:
                _quarantine_record(ctx, stream, report, state, kept, raw, reason)
            _flag_future(stream, read.records, report)
            report.new += len(read.records)
            if read.complete:
                ctx.claims.read_whole(stream.key)
            before = (state.watermark_us, len(state.seen), state.delivered_total)
            unsaved = {k: when for k, when in kept.items() if state.seen.get(k, -1) < when}
            state, version = _ship(ctx, stream, read.records, unsaved, state, version, report)
            ctx.observer.progressed(report, first_us, state.watermark_us or first_us)
            if read.next is None:
                break
            if ctx.should_stop():
                report.unfinished = True  # the next run goes on from here
                break
            shipped = (state.watermark_us, len(state.seen), state.delivered_total) != before
            # A pass may ship nothing and still move on (a page cap, a strategy that changed),
            # but never twice from the same place for the same reason.
            if not shipped and (read.next, read.reason) == position:
                raise StreamFailed("a pass delivered nothing new; stopping rather than loop")
            position, at = (read.next, read.reason), read.next
    except Stopped:
        report.stopped = True  # not a failure: what was committed stays, the rest waits for the next run
        log.warning("stream abandoned on a stop request", extra={"stream": stream.key})
    except ForwarderError as exc:
        report.error = redact(str(exc))
        # INFO: the run tells each cause once, with the number of streams (app.run_once).
        log.info("stream failed", extra={"stream": stream.key, "error": report.error})
    except Exception as exc:  # a bug must not stop the other streams, but it must be loud
        report.error = redact(f"unexpected {type(exc).__name__}: {exc}")
        log.exception("stream failed unexpectedly", extra={"stream": stream.key})
    if state is not None:
        _note_position(report, state)
    return report


def _progressed(
    observer: RunObserver, report: StreamReport, before: int, first_us: int, at_us: int, fetched: int
) -> None:
    """A page was read: ``fetched`` records so far in this pass, ``before`` in the passes before."""
    report.fetched = before + fetched
    observer.progressed(report, first_us, at_us)


def _note_position(report: StreamReport, state: StreamState) -> None:
    if state.watermark_us is not None:
        report.watermark = format_us(state.watermark_us)
        report.lag_seconds = round((now_us() - state.watermark_us) / 1e6, 3)


def _quarantine_record(
    ctx: RunContext,
    stream: Stream,
    report: StreamReport,
    state: StreamState,
    kept: Dict[str, int],
    raw: Any,
    reason: str,
) -> None:
    """A record no run can place in time goes to quarantine (raw, with the reason), not in the way,
    once: its id is in ``kept`` once this run wrote it (counted once per run, however often read) or
    dates it again, in ``state`` once an earlier run did. The write is durable before the id joins
    ``kept``, so before any commit can carry it."""
    rejection = unplaceable(raw, reason)
    if rejection.event.id in kept:  # met again in this run (a pass read again, a repeated page)
        return
    remembered = state.seen.get(rejection.event.id)
    if remembered is not None:
        report.skipped += 1
        # Dated again by the next commit once half its look-back window has passed: its id ages out
        # only once the service stops returning the record, so it is never quarantined twice.
        if remembered < now_us() - ctx.limits.window_s * 500_000:
            kept[rejection.event.id] = now_us()
        return
    ctx.quarantine.keep(stream.key, [rejection])
    kept[rejection.event.id] = now_us()
    report.invalid += 1
    report.quarantined += 1
    log.warning("record quarantined: it cannot be placed", extra={"stream": stream.key, "reason": reason})


def _flag_future(stream: Stream, records: Sequence[AuditRecord], report: StreamReport) -> None:
    """Records dated past the clock are shipped once, never move the watermark there, and are told."""
    ceiling = now_us() + FUTURE_SKEW_US
    future = [r for r in records if r.ts_us > ceiling]
    if future:
        report.future += len(future)
        log.warning(
            "records dated in the future: shipped once, the watermark not moved by them",
            extra={"stream": stream.key, "count": len(future), "newest": format_us(future[-1].ts_us)},
        )


def _ship(
    ctx: RunContext,
    stream: Stream,
    records: List[AuditRecord],
    quarantined: Dict[str, int],
    state: StreamState,
    version: Optional[str],
    report: StreamReport,
) -> Tuple[StreamState, Optional[str]]:
    """Normalize one pass and queue it in the run's shared batches, with the ids of the records it
    ``quarantined`` (they join the stream's next commit). Returns the state planned once they are
    accepted, which the next pass selects from; the store is written as batches are accepted
    (forwarder/delivery). StreamFailed if an earlier batch of this stream failed."""
    if not records and not quarantined and not ctx.claims.waiting(stream.key):
        return state, version  # nothing new: nothing is written
    events: List[Event] = []
    if records:  # a pass that only skipped copies loads no formatter
        ctx.on_records(stream, records)
        options = replace(ctx.options, ingest_time_us=now_us())
        format_record = ctx.formatter()
        events = [format_record(record, options) for record in records]
    if ctx.shipper is None:  # run_stream on its own: this pass is delivered and committed here
        shipper = _new_shipper(ctx)
        shipper.add(stream.key, records, events, state, version, quarantined)
        shipper.finish(ctx.flush_timeout_s)
        _merge(report, shipper.outcome(stream.key))
        failure = shipper.failure(stream.key)
        if failure is not None:
            raise StreamFailed(failure)
        return shipper.position(stream.key) or (state, version)
    failure = ctx.shipper.add(stream.key, records, events, state, version, quarantined)
    if failure is not None:
        raise StreamFailed(failure)
    ctx.renew_lease()
    return state.advance(records, ctx.limits.window_s * 1_000_000, quarantined=quarantined), version


def _new_shipper(ctx: RunContext, concurrency: int = 1) -> Shipper:
    return Shipper(
        ctx.sink,
        ctx.quarantine,
        ctx.store,
        window_us=ctx.limits.window_s * 1_000_000,
        linger_s=ctx.linger_s,
        commit_threads=2 * concurrency,  # state writes overlap the fetches of the next streams
        renew=ctx.renew_lease,
        claims=ctx.claims,
        journal=Journal.open(ctx.store, ctx.sink, ctx.claims),
        on_shipped=ctx.observer.shipped,
    )


def _merge(report: StreamReport, outcome: Outcome) -> None:
    """What the shipper did for the stream, into its report. The stream's own error comes first: it
    is why the stream stopped, whatever its batches met afterwards."""
    report.shipped += outcome.shipped
    report.quarantined += outcome.quarantined
    report.new -= outcome.copies
    report.skipped += outcome.copies
    report.stopped = report.stopped or outcome.stopped
    report.error = report.error or outcome.error


def run_streams(ctx: RunContext, plan: Sequence[Stream], concurrency: int, report: RunReport) -> None:
    """Run every stream of ``plan`` with bounded concurrency, their events sharing the sink's
    batches; streams not started before ``ctx.should_stop`` turns true are listed in
    ``report.not_started``. Returns once every batch is confirmed (or the flush timed out)."""
    lock = threading.Lock()  # pending and report.streams, shared by the worker threads
    pending = list(plan)

    def worker() -> None:
        while True:
            with lock:
                if not pending:
                    return
                if ctx.should_stop():
                    report.not_started.extend(s.key for s in pending)
                    pending.clear()
                    return
                stream = pending.pop(0)
            ctx.renew_lease()  # a long scan ships nothing, so renew between streams too
            result = run_stream(ctx, stream)
            ctx.observer.finished(result)
            with lock:
                report.streams.append(result)

    workers = max(1, min(concurrency, len(plan)))
    shipper = ctx.shipper = _new_shipper(ctx, workers)
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stream") as pool:
            # each worker in a copy of this context: log lines keep the run's tenant (logs.tenant_logs)
            for future in [pool.submit(contextvars.copy_context().run, worker) for _ in range(workers)]:
                stop.settle(future)
    finally:
        ctx.shipper = None
        try:
            shipper.finish(ctx.flush_timeout_s)  # also when a worker failed: what was sent gets committed
        finally:
            with lock:  # each report listed is its stream thread's no more: this thread writes it now
                for result in report.streams:
                    _merge(result, shipper.outcome(result.stream))
    for result in report.streams:
        position = shipper.position(result.stream)
        if position is not None:
            _note_position(result, position[0])
    order = {s.key: i for i, s in enumerate(plan)}
    report.streams.sort(key=lambda s: order[s.stream])


def new_owner() -> str:
    """host:pid:random, so a store on the same host can tell a dead holder from a live one."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
