"""Orchestration of one run: plan, select, normalize, ship, commit. No HTTP, formatting or storage
details live here: those come in through the small interfaces of api, normalize, sinks and state."""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Protocol, Sequence, Set, Tuple

from .api.paging import PageOutcome, ReadAgain
from .delivery.shipper import FLUSH_TIMEOUT_S, LINGER_S, Shipper
from .errors import ForwarderError
from .logs import redact
from .normalize import Formatter, NormalizeOptions
from .observer import IGNORE, RunObserver
from .quarantine import Quarantine, unplaceable
from .records import AuditRecord, InvalidRecord, parse_record
from .report import RunReport, StreamReport
from .sinks.base import Sink
from .state.model import FUTURE_SKEW_US, StreamState
from .state.store import Lease, StateStore
from .stop import Stopped
from .streams import Ownership, Stream
from .timeutil import format_us, now_us

log = logging.getLogger(__name__)


class RecordSource(Protocol):
    def pages(self, stream: Stream, start_us: Optional[int], outcome: PageOutcome) -> Iterable[List[Any]]:
        """Pages of raw audit records of ``stream``; ``start_us`` is a hint the service may ignore.
        ``outcome`` carries where offset paging resumes, and hears what the reader saw."""
        ...


class StreamFailed(ForwarderError):
    """A stream cannot go on this run; the state stays where it was."""


@dataclass(frozen=True)
class Limits:
    initial_lookback_s: int
    window_s: int
    max_records_per_pass: int


@dataclass
class RunContext:
    source: RecordSource
    store: StateStore
    sink: Sink
    formatter: Formatter
    quarantine: Quarantine
    limits: Limits
    ownership: Ownership
    options: NormalizeOptions  # ingest time is replaced per pass
    lease: Optional[Lease] = None
    lease_ttl_s: int = 900
    should_stop: Callable[[], bool] = lambda: False
    observer: RunObserver = IGNORE
    linger_s: float = LINGER_S  # a partly filled batch waits this long for other streams' events
    flush_timeout_s: float = FLUSH_TIMEOUT_S  # the end of a run waits this long for batches in flight
    shipper: Optional[Shipper] = None  # the run's shared batches, while run_streams runs
    # One renewal at a time: stream threads renew between streams, and a second renewal racing the
    # first would present the version the first replaced and wrongly learn that the lease was lost.
    lease_lock: threading.Lock = field(default_factory=threading.Lock)
    lease_renewed: float = field(default_factory=time.monotonic)

    def renew_lease(self) -> None:
        """Extend the lease once a third of its life has passed; LeaseHeld if it was lost."""
        if self.lease is None:
            return
        with self.lease_lock:
            if time.monotonic() - self.lease_renewed >= self.lease_ttl_s / 3:
                self.lease.renew()
                self.lease_renewed = time.monotonic()


@dataclass
class Selection:
    records: List[AuditRecord]  # oldest first
    complete: bool  # every new record seen fits in ``records``
    ascending: bool  # the pages came oldest-first, so a cut-off left only newer records unseen
    resume_offset: int = 0  # oldest-first pages: the first one that may hold a record left unshipped


# Records read in order (with a rise) before an oldest-first claim is believed enough to stop a
# pass early: a service that ignores sort cannot pass that by chance.
_ORDER_EVIDENCE = 20


def select_new(
    pages: Iterable[List[Any]],
    stream: Stream,
    state: StreamState,
    *,
    floor_us: int,
    limits: Limits,
    keeps: Callable[[Stream, AuditRecord], bool],
    report: StreamReport,
    on_unplaceable: Optional[Callable[[Any, str], None]] = None,
    outcome: Optional[PageOutcome] = None,
) -> Selection:
    """Keep the oldest ``max_records_per_pass`` new records of the pages.

    Memory stays bounded by twice that number whatever the backlog: past it, the newest are
    dropped from memory and the next pass picks them up. Once the cap is held, reading stops where
    every record still unread is known to be newer (oldest-first pages, or the end of a time
    window). After each page ``outcome`` hears what was read, for the source's stop rules.
    """
    outcome = outcome if outcome is not None else PageOutcome()
    cap = limits.max_records_per_pass
    window_us = limits.window_s * 1_000_000
    chosen: Dict[str, AuditRecord] = {}
    read: Set[int] = set()  # hashes of the ids read in this pass: a page adding none ends paging
    complete = ascending = True
    rose = False  # a later record was newer: the order is shown, not only claimed
    fetched_before = report.fetched
    last_ts = -(2**63)
    oldest: Optional[int] = None
    page_ends: List[Tuple[int, int]] = []  # (created_at of the page's last record, its offset)
    iterator = iter(pages)
    for page_no, page in enumerate(iterator, 1):
        added = 0
        for index, raw in enumerate(page, 1):
            report.fetched += 1
            try:
                record = parse_record(raw, stream.object_type)
            except InvalidRecord as exc:
                report.invalid += 1
                if on_unplaceable is None:
                    raise StreamFailed(f"page {page_no}, record {index}: {exc}") from None
                on_unplaceable(raw, f"page {page_no}, record {index}: {exc}")  # quarantined; move on
                continue
            key = hash(record.event_id)
            if key not in read:
                read.add(key)
                added += 1
            ascending = ascending and record.ts_us >= last_ts
            rose = rose or (oldest is not None and record.ts_us > last_ts)
            last_ts = record.ts_us
            oldest = last_ts if oldest is None else min(oldest, last_ts)
            if record.event_id in chosen:
                continue
            if not state.is_new(record, floor_us, window_us) or not keeps(stream, record):
                report.skipped += 1
                continue
            chosen[record.event_id] = record
            if len(chosen) >= 2 * cap:
                chosen = {r.event_id: r for r in sorted(chosen.values(), key=_sort_key)[:cap]}
                complete = False
        outcome.added, outcome.ascending, outcome.oldest_us = added, ascending, oldest
        if page:
            outcome.last_us = last_ts
            page_ends.append((last_ts, outcome.page_offset))
        if ascending and rose and report.fetched - fetched_before >= _ORDER_EVIDENCE:
            outcome.order_shown = True
        shown = ascending and outcome.order_shown and outcome.sorted_request
        if len(chosen) >= cap and (outcome.boundary or shown):
            complete = False  # the rest is newer than what is held: the next pass resumes here
            break
    close = getattr(iterator, "close", None)
    if close is not None:
        close()  # no more pages wanted: a generator source stops fetching now
    records = sorted(chosen.values(), key=_sort_key)
    if len(records) > cap:
        records, complete = records[:cap], False
    # Every record on a page ending before the newest selected one was read and shipped or skipped.
    newest = records[-1].ts_us if records else None
    resume = next((offset for end, offset in page_ends if newest is None or end >= newest), 0)
    return Selection(records, complete, ascending, resume)


def _observed(pages: Iterable[List[Any]], notify: Callable[[], None]) -> Iterator[List[Any]]:
    """``pages``, calling ``notify`` once each page has been read through."""
    for page in pages:
        yield page
        notify()


def _sort_key(record: AuditRecord) -> Tuple[int, str]:
    return record.sort_key


def _start_hint(state: StreamState, floor_us: int, window_us: int) -> int:
    """The earliest created_at the stream could still need: a start_date for the service."""
    return floor_us if state.watermark_us is None else state.watermark_us - window_us


def _next_pass(outcome: PageOutcome, selection: Selection) -> Tuple[Optional[int], PageOutcome]:
    """Where the pass after this one starts, inside the same run.

    A pass cut off by the cap leaves unshipped only records at or after the newest one it selected
    (it read every older one in its range), from ``resume_offset`` on in oldest-first pages; a pass the source
    stopped (page cap, windows left) goes on where it stopped. Late records older than that are
    the next run's: its look-back window covers them.
    """
    if not selection.complete:
        return selection.records[-1].ts_us, PageOutcome(start_offset=selection.resume_offset)
    return outcome.resume_us, PageOutcome(start_offset=outcome.start_offset + outcome.items)


def run_stream(ctx: RunContext, stream: Stream) -> StreamReport:
    report = StreamReport(stream.key)
    state: Optional[StreamState] = None
    try:
        loaded = ctx.store.load(stream.key)
        state, version = loaded.state.held_to(now_us() + FUTURE_SKEW_US), loaded.version  # heal old poison
        window_us = ctx.limits.window_s * 1_000_000
        floor_us = now_us() - ctx.limits.initial_lookback_s * 1_000_000
        first_us = _start_hint(state, floor_us, window_us)
        start: Optional[int] = first_us
        ctx.observer.progressed(report, first_us, first_us)
        outcome = PageOutcome()
        position: Tuple[Any, ...] = ()
        while True:
            report.passes += 1
            pages = _observed(
                ctx.source.pages(stream, start, outcome),
                functools.partial(ctx.observer.progressed, report, first_us, state.watermark_us or first_us),
            )
            try:
                selection = select_new(
                    pages,
                    stream,
                    state,
                    floor_us=floor_us,
                    limits=ctx.limits,
                    keeps=ctx.ownership.keeps,
                    report=report,
                    on_unplaceable=functools.partial(_quarantine_record, ctx, stream, report),
                    outcome=outcome,
                )
            except ReadAgain:  # the source learnt the order was not as asked: same start, new way
                report.api_calls += outcome.pages
                outcome = PageOutcome(start_offset=outcome.start_offset)
                continue
            _flag_future(stream, selection.records, report)
            report.truncated = report.truncated or outcome.truncated
            report.strategy = outcome.strategy or report.strategy
            report.api_calls += outcome.pages
            if outcome.truncated and not outcome.more and not selection.ascending:
                raise StreamFailed(
                    f"{outcome.reason} before the end of the stream, and the service does not return "
                    "records oldest-first, so older records may be unseen: nothing shipped "
                    "(raise FORWARDER_MAX_PAGES)"
                )
            report.new += len(selection.records)
            before = (state.watermark_us, len(state.seen), state.delivered_total)
            state, version = _ship(ctx, stream, selection.records, state, version, report)
            ctx.observer.progressed(report, first_us, state.watermark_us or first_us)
            if (selection.complete and not outcome.more) or ctx.should_stop():
                break
            shipped = (state.watermark_us, len(state.seen), state.delivered_total) != before
            start, following = _next_pass(outcome, selection)
            # A pass may ship nothing and still move on (a page cap, a strategy that changed),
            # but never twice from the same place for the same reason.
            if not shipped and (start, following.start_offset, outcome.reason) == position:
                raise StreamFailed("a pass delivered nothing new; stopping rather than loop")
            position = (start, following.start_offset, outcome.reason)
            outcome = following
    except Stopped:
        report.stopped = True  # not a failure: what was committed stays, the rest waits for the next run
        log.warning("stream abandoned on a stop request", extra={"stream": stream.key})
    except ForwarderError as exc:
        report.error = redact(str(exc))
        log.error("stream failed", extra={"stream": stream.key, "error": report.error})
    except Exception as exc:  # a bug must not stop the other streams, but it must be loud
        report.error = redact(f"unexpected {type(exc).__name__}: {exc}")
        log.exception("stream failed unexpectedly", extra={"stream": stream.key})
    if state is not None:
        _note_position(report, state)
    return report


def _note_position(report: StreamReport, state: StreamState) -> None:
    if state.watermark_us is not None:
        report.watermark = format_us(state.watermark_us)
        report.lag_seconds = round((now_us() - state.watermark_us) / 1e6, 3)


def _quarantine_record(ctx: RunContext, stream: Stream, report: StreamReport, raw: Any, reason: str) -> None:
    """A record no run can place in time goes to quarantine (raw, with the reason), not in the way."""
    ctx.quarantine.keep(stream.key, [unplaceable(raw, reason)])
    report.quarantined += 1
    log.warning("record quarantined: it cannot be placed", extra={"stream": stream.key, "reason": reason})


def _flag_future(stream: Stream, records: Sequence[AuditRecord], report: StreamReport) -> None:
    """Records dated past the clock are shipped once, never move the watermark there, and are told."""
    ceiling = now_us() + FUTURE_SKEW_US
    future = [r for r in records if r.ts_us > ceiling]
    if future:
        report.future += len(future)
        log.warning(
            "records dated in the future: shipped once, the watermark stays at the clock",
            extra={"stream": stream.key, "count": len(future), "newest": format_us(future[-1].ts_us)},
        )


def _ship(
    ctx: RunContext,
    stream: Stream,
    records: List[AuditRecord],
    state: StreamState,
    version: Optional[str],
    report: StreamReport,
) -> Tuple[StreamState, Optional[str]]:
    """Normalize one pass and queue it in the run's shared batches. Returns the state planned once
    they are accepted, which the next pass selects from; the store is written as batches are
    accepted (forwarder/delivery). StreamFailed if an earlier batch of this stream failed."""
    if not records:
        return state, version
    options = replace(ctx.options, ingest_time_us=now_us())
    events = [ctx.formatter(record, options) for record in records]
    if ctx.shipper is None:  # run_stream on its own: this pass is delivered and committed here
        shipper = _new_shipper(ctx)
        shipper.add(stream.key, records, events, state, version, report)
        shipper.finish(ctx.flush_timeout_s)
        failure = shipper.failure(stream.key)
        if failure is not None:
            raise StreamFailed(failure)
        return shipper.position(stream.key) or (state, version)
    failure = ctx.shipper.add(stream.key, records, events, state, version, report)
    if failure is not None:
        raise StreamFailed(failure)
    ctx.renew_lease()
    return state.advance(records, ctx.limits.window_s * 1_000_000), version


def _new_shipper(ctx: RunContext, concurrency: int = 1) -> Shipper:
    return Shipper(
        ctx.sink,
        ctx.quarantine,
        ctx.store,
        window_us=ctx.limits.window_s * 1_000_000,
        linger_s=ctx.linger_s,
        commit_threads=2 * concurrency,  # state writes overlap the fetches of the next streams
        renew=ctx.renew_lease,
    )


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
            for future in [pool.submit(worker) for _ in range(workers)]:
                future.result()
    finally:
        ctx.shipper = None
        shipper.finish(ctx.flush_timeout_s)  # also when a worker failed: what was sent gets committed
    for result in report.streams:
        position = shipper.position(result.stream)
        if position is not None:
            _note_position(result, position[0])
    order = {s.key: i for i, s in enumerate(plan)}
    report.streams.sort(key=lambda s: order[s.stream])


def new_owner() -> str:
    """host:pid:random, so a store on the same host can tell a dead holder from a live one."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
