"""Ships a run's events in batches shared by every stream and commits each stream's state once
its batches are accepted (see commits.py for the rule).

Bounded everywhere: at most ``max_in_flight`` batches are being sent or having the states they
allow written (the sink declares it; syslog, files and stdout say 1: one connection, in order), and
at most as many more wait closed, so a stream that adds events waits for room; one batch is open,
closed when full or after ``linger_s``; ``max_in_flight`` sender threads and ``commit_threads`` state
writers; ``finish`` waits a bounded time for the last batches.

What it did for each stream is tallied in an ``Outcome`` of its own, never in the stream's report:
the run merges it into the report on one thread once the batches are settled.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from .. import stop
from ..errors import ForwarderError, StateError
from ..events import Event, Rejection
from ..quarantine import Quarantine
from ..records import AuditRecord
from ..sinks.base import Sink
from ..state.model import StreamState
from ..state.store import StateStore
from ..stop import Stopped
from .batcher import Batch, Batcher
from .claims import Claims
from .commits import Commit, CommitTracker
from .journal import Journal

log = logging.getLogger(__name__)

LINGER_S = 1.0  # how long a partly filled batch waits for more events from other streams
FLUSH_TIMEOUT_S = 120.0  # how long the end of a run waits for the batches still being sent


@dataclass
class Outcome:
    """What the shipper did with one stream's records in a run, so far."""

    shipped: int = 0  # accepted by the sink
    quarantined: int = 0  # refused by the sink for good, kept in quarantine
    copies: int = 0  # selected, then found claimed by another stream since: skipped, not shipped
    stopped: bool = False  # a stop request cut one of its batches or state writes
    error: Optional[str] = None  # why its batches or state writes failed (the first reason)


class Shipper:
    def __init__(
        self,
        sink: Sink,
        quarantine: Quarantine,
        store: StateStore,
        *,
        window_us: int,
        linger_s: float = LINGER_S,
        commit_threads: int = 4,
        renew: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,  # the linger's (tests stand it still)
        claims: Optional[Claims] = None,  # the run's, when streams may return copies of one record
        journal: Optional[Journal] = None,  # for a sink that writes a batch as several objects (with claims)
        on_shipped: Callable[[str, int], None] = lambda stream, count: None,  # told from the senders
    ) -> None:
        self._sink = sink
        self._claims = claims
        self._journal = journal
        self._quarantine = quarantine
        self._store = store
        # A sink writing data lake objects asks for a longer linger (``linger_s``): fewer, larger objects.
        self._linger_s = max(linger_s, float(getattr(sink, "linger_s", 0.0)))
        self._clock = clock
        self._renew = renew
        self._on_shipped = on_shipped
        self._max_in_flight = max(1, int(getattr(sink, "max_in_flight", 1)))
        self._batcher = Batcher(sink.max_batch_events, sink.max_batch_bytes)
        self._tracker = CommitTracker(window_us, claims)
        self._outcomes: Dict[str, Outcome] = {}
        self._queue: Deque[Batch] = deque()  # closed, not yet taken by a sender
        self._in_flight = 0
        # Guards the queue, _in_flight, _closing, _stopped, _fatal, _cut and _outcomes: stream threads add
        # batches, sender threads take them, and the flush waits on it until every batch is settled.
        self._cond = threading.Condition()
        self._closing = False
        self._stopped = False  # senders take nothing more
        self._fatal: Optional[BaseException] = None  # a sender died of it; re-raised to the run
        self._cut: Set[str] = set()  # streams a stop request cut in flight: stopped, not failed
        self._threads: List[threading.Thread] = []
        # State writes (an fsync, an S3 PUT) cost more than a send shared by hundreds of streams:
        # a batch's are made in parallel, each stream's one at a time and in order (CommitTracker).
        self._committers = ThreadPoolExecutor(max(1, commit_threads), thread_name_prefix="commit")

    # --- producers (stream workers) ----------------------------------------------------------------

    def add(
        self,
        stream: str,
        records: Sequence[AuditRecord],
        events: Sequence[Event],
        state: StreamState,
        version: Optional[str],
        quarantined: Optional[Mapping[str, int]] = None,
    ) -> Optional[str]:
        """Queue one pass of ``stream`` (``state``/``version`` as loaded, the first time), with the
        ids (-> when) of the unplaceable records it wrote to quarantine: they join the stream's next
        commit. Returns why the stream failed earlier, in which case nothing was queued; waits while
        the senders are full."""
        with self._cond:
            self._check_fatal()
            self._tracker.open(stream, state, version)
            outcome = self._outcomes.setdefault(stream, Outcome())
            failure = self._failure(stream)
            if failure is not None:
                return failure
            if self._claims is not None and records:
                records, events = _claimed(self._claims, stream, records, events, outcome)
            self._tracker.carry(stream, quarantined or {})
            for batch in self._batcher.add(stream, records, events, self._clock()):
                self._tracker.closed(batch)
                self._queue.append(batch)
            self._start_senders()
            self._cond.notify_all()
            while len(self._queue) >= self._max_in_flight and self._fatal is None and not self._stopped:
                self._cond.wait()
            self._check_fatal()
        return None

    def position(self, stream: str) -> Optional[Tuple[StreamState, Optional[str]]]:
        """The state last committed for ``stream`` and its version (None: never queued)."""
        with self._cond:
            return self._tracker.position(stream)

    def failure(self, stream: str) -> Optional[str]:
        with self._cond:
            return self._failure(stream)

    def outcome(self, stream: str) -> Outcome:
        """What was done for ``stream`` so far (a copy: final once ``finish`` returned)."""
        with self._cond:
            return replace(self._outcomes.get(stream) or Outcome())

    def _failure(self, stream: str) -> Optional[str]:
        """Why ``stream`` cannot go on; Stopped when a stop request cut one of its batches."""
        failure = self._tracker.failure(stream)
        if failure is not None and stream in self._cut:
            raise Stopped(failure)
        return failure

    def finish(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        """Send what is left and wait, at most ``timeout_s``, for every batch and commit; streams whose
        batches are still unconfirmed then fail (their records go again next run, same ids)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._closing = True
            batch = self._batcher.cut()  # queued now, so that end() sees its streams' records pending
            if batch is not None:
                self._tracker.closed(batch)
                self._queue.append(batch)
            if self._fatal is None:  # streams that carry quarantined ids and nothing else: last commits
                for commit in self._tracker.end():
                    self._committers.submit(self._guarded, self._commit, commit)
            self._cond.notify_all()
        while True:
            with self._cond:
                busy = self._queue or self._batcher.opened_at is not None or self._tracker.unsettled()
                left = deadline - time.monotonic()
                urgent = stop.cuts(stop.FINISHING)  # a second stop signal: wait for nothing more
                if not busy or self._fatal is not None or left <= 0 or urgent:
                    self._stopped = True
                    self._cond.notify_all()
                    if busy and self._fatal is None:
                        self._abandon(timeout_s, urgent)
                    break
                self._cond.wait(min(left, 1.0))
            self._renew()  # a long flush must not lose the run's lease
        # A run that dies (a fatal) writes no state once it has handed the fatal on: a commit still
        # being written would race the next run's (a warm Lambda, a Splunk input) on the same stream.
        dying = self._fatal is not None
        self._committers.shutdown(wait=dying, cancel_futures=dying)
        for thread in self._threads:  # after a second stop request a send still going is left behind
            thread.join(0.0 if stop.cuts(stop.FINISHING) else max(0.0, deadline - time.monotonic()))
        with self._cond:
            self._check_fatal()

    # --- senders ---------------------------------------------------------------------------------

    def _start_senders(self) -> None:
        while len(self._threads) < self._max_in_flight:
            name = f"send-{len(self._threads)}"
            thread = threading.Thread(target=self._guarded, args=(self._sender,), name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def _guarded(self, work: Callable[..., None], *args: Any) -> None:
        """Run ``work`` in a thread of ours: whatever kills it is handed to the run, which re-raises it."""
        try:
            work(*args)
        except BaseException as exc:
            with self._cond:
                self._fatal = self._fatal or exc
                self._cond.notify_all()

    def _sender(self) -> None:
        while True:
            batch = self._next()
            if batch is None:
                return
            try:
                self._deliver(batch)
            finally:
                with self._cond:
                    self._in_flight -= 1
                    self._cond.notify_all()

    def _next(self) -> Optional[Batch]:
        """The next batch to send, in order; None once the run is over."""
        with self._cond:
            while True:
                if self._stopped or self._fatal is not None:
                    return None
                if self._queue:
                    batch: Optional[Batch] = self._queue.popleft()
                    break
                opened = self._batcher.opened_at
                if opened is None and self._closing:
                    return None
                wait = None if opened is None else opened + self._linger_s - self._clock()
                if wait is not None and (wait <= 0 or self._closing):
                    batch = self._batcher.cut()
                    assert batch is not None
                    self._tracker.closed(batch)
                    break
                self._cond.wait(wait)
            self._in_flight += 1
            self._cond.notify_all()  # a producer may wait for room in the queue
            return batch

    def _deliver(self, batch: Batch) -> None:
        keys: List[str] = []
        if self._journal is not None:
            try:  # before the first object is written: a cut batch's objects are found next run
                keys = self._journal.begin(batch.events)
            except ForwarderError as exc:
                self._refuse(batch, f"a batch ({len(batch.events)} events) was not sent: {exc}")
                return
        try:
            result = self._sink.send(batch.events)
            rejected = self._by_stream(batch, result.rejected)
            for stream, rejections in rejected.items():
                self._quarantine.keep(stream, rejections)
        except Stopped as exc:  # not the sink's answer: the batch stays uncommitted, sent next run
            self._refuse(batch, f"a batch ({len(batch.events)} events) was abandoned: {exc}", cut=True)
            return
        except ForwarderError as exc:
            # The sink's words alone, the same for every batch that failed alike: the run tells them once.
            self._refuse(batch, str(exc))
            return
        except Exception as exc:  # a bug must fail the streams concerned, loudly, not the run
            log.exception("sending a batch failed unexpectedly")
            self._refuse(batch, f"unexpected {type(exc).__name__} while sending a batch: {exc}")
            return
        if self._claims is not None:
            try:  # before any state covering these events is committed (claims.py); as a commit,
                with stop.shielded(stop.FINISHING):  # only an urgent stop cuts it
                    self._claims.record([event.id for event in batch.events])
            except Stopped as exc:
                self._refuse(batch, f"a delivered batch was left unrecorded: {exc}", cut=True)
                return
            except StateError as exc:
                self._refuse(
                    batch,
                    f"the sink accepted a batch ({len(batch.events)} events) but the delivered-ids index "
                    f"was not saved; its records will be sent again next run: {exc}",
                )
                return
        if self._journal is not None:
            try:
                self._journal.end(keys)
            except StateError as exc:  # the batch is recorded: only later batches are refused
                log.warning("pending-objects journal not saved", extra={"error": str(exc)})
        shipped = _shipped(batch, rejected)
        for stream, count in shipped.items():
            self._on_shipped(stream, count)
        with self._cond:
            for stream, count in shipped.items():
                self._outcomes[stream].shipped += count
            for stream, rejections in rejected.items():
                self._outcomes[stream].quarantined += len(rejections)
            if not self._stopped and self._fatal is None:  # else these streams failed already
                for commit in self._tracker.accepted(batch):
                    self._committers.submit(self._guarded, self._commit, commit)
            # The batch keeps its place in flight until its records are committed (some by the sender
            # of an earlier batch of the same stream): a crash re-sends at most the batches in flight.
            while not self._tracker.settled(batch) and self._fatal is None and not self._stopped:
                self._cond.wait()
        self._renew()

    def _commit(self, commit: Optional[Commit]) -> None:
        """Write ``commit``, then whatever became due for the same stream meanwhile."""
        while commit is not None:
            with self._cond:
                if self._fatal is not None:  # the run is dying: the next run sends these records again
                    return
            try:
                with stop.shielded(stop.FINISHING):  # the sink has the batch: only an urgent stop cuts this
                    version = self._store.commit(commit.stream, commit.state, commit.version)
            except Stopped as exc:
                self._fail_commit(commit, exc, cut=True)
                return
            except StateError as exc:
                self._fail_commit(commit, exc)
                return
            except Exception as exc:
                log.exception("committing a stream's state failed unexpectedly")
                self._fail_commit(commit, exc)
                return
            with self._cond:
                commit = self._tracker.committed(commit, version)
                self._cond.notify_all()  # the flush may be waiting for this

    def _fail_commit(self, commit: Commit, exc: Exception, cut: bool = False) -> None:
        """The state of accepted batches was not written; ``cut``: by an urgent stop, not a failure."""
        reason = f"batch delivered but state not saved (it will be re-sent next run): {exc}"
        with self._cond:
            if self._tracker.commit_failed(commit, reason):
                if cut:
                    self._stopped_stream(commit.stream)
                else:
                    self._report_failure(commit.stream, reason)
            self._cond.notify_all()

    def _refuse(self, batch: Batch, reason: str, cut: bool = False) -> None:
        """The streams in ``batch`` go no further this run: failed, or only stopped when ``cut``."""
        with self._cond:
            self._cond.notify_all()  # later batches of these streams wait for them no more
            for stream in self._tracker.refused(batch, reason):
                if cut:
                    self._stopped_stream(stream)
                else:
                    self._report_failure(stream, reason)
                self._batcher.drop(stream)

    def _stopped_stream(self, stream: str) -> None:
        """Called with the lock held: a stop request cut ``stream``'s batch or state write."""
        self._cut.add(stream)
        self._outcomes[stream].stopped = True
        log.warning("stream stopped with a batch in flight", extra={"stream": stream})

    def _abandon(self, timeout_s: float, urgent: bool) -> None:
        """Called with the lock held, once the flush wait is over (``urgent``: cut by a second stop)."""
        batch = self._batcher.cut()
        if batch is not None:
            self._tracker.closed(batch)
        waited = "a second stop request" if urgent else f"{timeout_s:g} s of the end of the run"
        reason = (
            f"batches not confirmed by the sink within {waited}; their records will be sent again next run"
        )
        for stream in self._tracker.abandon(reason):
            if urgent:
                self._stopped_stream(stream)
            else:
                self._report_failure(stream, reason)

    def _report_failure(self, stream: str, reason: str) -> None:
        outcome = self._outcomes[stream]
        outcome.error = outcome.error or reason
        # INFO: the run tells each cause once, with the number of streams (app.run_once).
        log.info("stream failed", extra={"stream": stream, "error": reason})

    def _check_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    @staticmethod
    def _by_stream(batch: Batch, rejections: Sequence[Rejection]) -> Dict[str, List[Rejection]]:
        if not rejections:
            return {}
        owner = {r.event_id: s.stream for s in batch.segments for r in s.records}
        grouped: Dict[str, List[Rejection]] = {}
        for rejection in rejections:
            grouped.setdefault(owner.get(rejection.event.id, batch.segments[0].stream), []).append(rejection)
        return grouped


def _claimed(
    claims: Claims,
    stream: str,
    records: Sequence[AuditRecord],
    events: Sequence[Event],
    outcome: Outcome,
) -> Tuple[Sequence[AuditRecord], Sequence[Event]]:
    """The records (and their events) ``stream`` ships: those another stream claimed since it
    selected them are skipped copies now."""
    mine = claims.claim(stream, records)
    if len(mine) == len(records):
        return records, events
    outcome.copies += len(records) - len(mine)
    return [records[i] for i in mine], [events[i] for i in mine]


def _shipped(batch: Batch, rejected: Mapping[str, Sequence[Rejection]]) -> Dict[str, int]:
    """Per stream, the records of an accepted ``batch`` the sink kept (its ``rejected`` ones aside)."""
    counts: Dict[str, int] = {}
    for segment in batch.segments:
        counts[segment.stream] = counts.get(segment.stream, 0) + len(segment.records)
    for stream, rejections in rejected.items():
        counts[stream] -= len(rejections)
    return counts
