"""The shipper's bounds: requests in flight, order for one-connection sinks, and the end-of-run wait.

The linger: a partly filled batch, shared by the streams that added to it, is sent once it has
waited ``linger_s`` on the shipper's clock, without more events and before the run ends.
"""

from __future__ import annotations

import threading
import time
from typing import List, Sequence

import pytest

from forwarder.delivery.shipper import Outcome, Shipper
from forwarder.errors import ConflictError
from forwarder.events import Event, SendResult
from forwarder.pipeline import run_streams
from forwarder.quarantine import LocalQuarantine
from forwarder.reading.select import Limits
from forwarder.records import event_id
from forwarder.report import RunReport
from forwarder.state.model import StreamState
from forwarder.stop import Stopped
from forwarder.streams import Stream
from forwarder.timeutil import now_us
from tests.delivery.helpers import WINDOW_US, events, records
from tests.delivery.helpers import events as batch_events
from tests.delivery.helpers import records as batch_records
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import ListSource, make_records, run_context

STREAMS = [Stream("user", f"u{i}@example.com") for i in range(12)]


class WatchingSink:
    """Counts the sends running at once; ``gate`` (when set) holds every send until it opens."""

    name = "watching"

    def __init__(self, max_in_flight: int, gate: threading.Event | None = None, batch: int = 4) -> None:
        self.max_batch_events, self.max_batch_bytes, self.max_in_flight = batch, 10**6, max_in_flight
        self.gate = gate
        self.meet: threading.Barrier | None = None  # (when set) the first sends wait for each other
        self.running = self.most = 0
        self.batches: List[List[str]] = []
        self.lock = threading.Lock()

    def send(self, batch: Sequence[Event]) -> SendResult:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            meet, self.meet = self.meet, (self.meet if self.running < 2 else None)
        if meet is not None:
            meet.wait()  # raises BrokenBarrierError if no second send ever runs beside the first
        if self.gate is not None:
            self.gate.wait(30)
        time.sleep(0.001)  # give other senders a chance to overlap
        with self.lock:
            self.running -= 1
            self.batches.append([e.id for e in batch])
        return SendResult.all_delivered(len(batch))

    def close(self) -> None:
        pass


def run(sink, tmp_path, flush_timeout_s: float = 60.0):
    base_us = now_us() - 3600 * 1_000_000
    records = [r for s in STREAMS for r in make_records(list(range(5)), base_us, s.name)]
    store = MemoryStore()
    source, quarantine = ListSource(records, "asc", 10, 0), LocalQuarantine(str(tmp_path))
    limits = Limits(86400, 3600, 100)
    ctx = run_context(source, store, sink, quarantine, limits, STREAMS, flush_timeout_s=flush_timeout_s)
    report = RunReport(started="now")
    run_streams(ctx, STREAMS, 4, report)
    return report, store, records


def test_concurrent_sinks_get_at_most_their_requests_in_flight_and_batches_are_shared(tmp_path):
    sink = WatchingSink(max_in_flight=2)
    sink.meet = threading.Barrier(2, timeout=30)  # two sends must overlap: no lock serializes them
    report, store, records = run(sink, tmp_path)
    assert report.ok and sink.most == 2
    assert len(sink.batches) == len(records) // 4  # 60 events of 12 streams in 15 full batches
    assert all(store.load(s.key).state.delivered_total == 5 for s in STREAMS)


def test_a_one_connection_sink_gets_one_batch_at_a_time_each_stream_in_order(tmp_path):
    sink = WatchingSink(max_in_flight=1)
    report, _, records = run(sink, tmp_path)
    assert report.ok and sink.most == 1
    sent = [i for batch in sink.batches for i in batch]
    for stream in STREAMS:
        mine = [event_id(r) for r in records if r["user"] == stream.name]
        assert [i for i in sent if i in set(mine)] == mine


def test_batches_unconfirmed_at_the_end_of_the_flush_wait_fail_their_streams(tmp_path):
    gate = threading.Event()
    sink = WatchingSink(max_in_flight=2, gate=gate, batch=100)  # one batch, sent when the run ends
    try:
        report, store, _ = run(sink, tmp_path, flush_timeout_s=0.2)
    finally:
        gate.set()
    failed = [s for s in report.streams if not s.ok]
    assert failed and all("not confirmed by the sink within 0.2 s" in (s.error or "") for s in failed)
    assert all(store.load(s.stream).version is None for s in failed)  # nothing committed for them


class StoppedSink(WatchingSink):
    """A stop request (SIGTERM) cuts every send: forwarder.deadline raises Stopped in flight."""

    def send(self, batch: Sequence[Event]) -> SendResult:
        raise Stopped("stopping on request: the request in flight was cut")


def test_a_batch_cut_by_a_stop_request_leaves_its_streams_stopped_not_failed(tmp_path):
    report, store, _ = run(StoppedSink(max_in_flight=2), tmp_path)
    assert report.ok, [s.error for s in report.streams if s.error]  # a stop is not a failure
    assert all(s.stopped and s.shipped == 0 for s in report.streams)
    assert all(store.load(s.key).version is None for s in STREAMS)  # nothing committed past the cut


class IndexFailingStore(MemoryStore):
    """The delivered-ids index cannot be written: another writer changed it, or a stop request cuts
    the write (``stopped``)."""

    def __init__(self, stopped: bool) -> None:
        super().__init__()
        self.stopped = stopped

    def slot(self, name):
        slot = super().slot(name)

        def put(doc, expected):
            if self.stopped:
                raise Stopped("stopping on request: the request in flight was cut")
            raise ConflictError(f"{slot.location} was changed by another writer")

        slot.put = put
        return slot


@pytest.mark.parametrize("stopped", [False, True])
def test_a_batch_whose_ids_cannot_be_recorded_commits_nothing_for_its_streams(tmp_path, stopped):
    """Accepted by the sink, but its ids are not in the index: no state may pass them (a stream
    that skipped a copy would otherwise never see it again); the next run sends them again."""
    sink = WatchingSink(max_in_flight=1, batch=100)
    store = IndexFailingStore(stopped)
    base_us = now_us() - 3600 * 1_000_000
    records = [r for s in STREAMS for r in make_records(list(range(5)), base_us, s.name)]
    ctx = run_context(
        ListSource(records, "asc", 10, 0),
        store,
        sink,
        LocalQuarantine(str(tmp_path)),
        Limits(86400, 3600, 100),
        STREAMS,
    )
    report = RunReport(started="now")
    run_streams(ctx, STREAMS, 4, report)
    assert sink.batches  # the sink got them
    if stopped:
        assert report.ok and all(s.stopped and s.shipped == 0 for s in report.streams)
    else:
        assert all("delivered-ids index" in (s.error or "") for s in report.streams)
    assert all(store.load(s.key).version is None for s in STREAMS)


class Crash(BaseException):
    """The process dies in a commit: nothing in the forwarder may catch this."""


class CrashingStore(MemoryStore):
    """The second commit crashes; the first waits until the run has taken the crash as fatal (so one
    write is in progress when the run dies). Every commit started after that is counted."""

    def __init__(self) -> None:
        super().__init__()
        self.fatal = threading.Event()  # set once the shipper holds the crash as its fatal
        self.started = 0
        self.after_crash = 0

    def commit(self, key, state, version):
        with self._lock:
            self.started += 1
            number = self.started
            if self.fatal.is_set():
                self.after_crash += 1
        if number == 1:
            self.fatal.wait(30)
        elif number == 2:
            raise Crash("killed in a commit")
        return super().commit(key, state, version)


def test_a_run_that_dies_writes_no_state_after_it_has_ended(tmp_path, monkeypatch):
    """A fatal in one commit ends the run once the commits already being written are done: none is
    written afterwards, where it would race the next run in the same process (a warm Lambda)."""
    store = CrashingStore()
    guarded = Shipper._guarded

    def noting_the_fatal(self, work, *args):
        guarded(self, work, *args)
        if self._fatal is not None:
            store.fatal.set()

    monkeypatch.setattr(Shipper, "_guarded", noting_the_fatal)
    base_us = now_us() - 3600 * 1_000_000
    records = [r for s in STREAMS for r in make_records(list(range(5)), base_us, s.name)]
    source, quarantine = ListSource(records, "asc", 10, 0), LocalQuarantine(str(tmp_path))
    ctx = run_context(
        source, store, WatchingSink(max_in_flight=2), quarantine, Limits(86400, 3600, 100), STREAMS
    )
    before = set(threading.enumerate())
    with pytest.raises(Crash):
        run_streams(ctx, STREAMS, 4, RunReport(started="now"))
    writers = [t for t in set(threading.enumerate()) - before if t.name.startswith("commit")]
    assert writers == []  # none of the run's commit threads outlives it
    assert store.fatal.is_set() and store.after_crash == 0


def test_the_shipper_tallies_each_streams_outcome_of_its_own(tmp_path):
    """What the sink did with each stream's records, and why a stream failed, in an Outcome per
    stream that the run merges into the stream's report (the shipper has none)."""
    sink = MemorySink(max_batch_events=2, fail_sends=[2])  # one sender, in order: b's batch is refused
    shipper = Shipper(sink, LocalQuarantine(str(tmp_path)), MemoryStore(), window_us=WINDOW_US, linger_s=0.0)
    for stream in ("user/a", "user/b"):
        recs = batch_records(stream, 2)
        assert shipper.add(stream, recs, batch_events(recs), StreamState(), None) is None
    shipper.finish(timeout_s=30)
    assert shipper.outcome("user/a") == Outcome(shipped=2)
    refused = shipper.outcome("user/b")
    assert refused.shipped == 0 and "refused on purpose" in (refused.error or "")
    assert shipper.outcome("user/never-added") == Outcome()


LINGER_S = 0.25  # and the clock steps below: binary fractions, so the sums are exact


class StillClock:
    """Stands still until the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RecordingSink:
    name = "recording"
    max_batch_events, max_batch_bytes, max_in_flight = 100, 10**6, 2

    def __init__(self) -> None:
        self.batches: List[List[str]] = []
        self.sent = threading.Event()

    def send(self, batch: Sequence) -> SendResult:
        self.batches.append([e.id for e in batch])
        self.sent.set()
        return SendResult.all_delivered(len(batch))

    def close(self) -> None:
        pass


def test_a_partial_batch_of_two_streams_is_sent_when_the_linger_is_over_not_before(tmp_path):
    clock, sink, store = StillClock(), RecordingSink(), MemoryStore()
    shipper = Shipper(
        sink, LocalQuarantine(str(tmp_path)), store, window_us=WINDOW_US, linger_s=LINGER_S, clock=clock
    )
    added = {"user/a": records("a@example.com", 3), "user/b": records("b@example.com", 2)}
    for stream, recs in added.items():
        assert shipper.add(stream, recs, events(recs), StreamState(), None) is None

    # The sender wakes every linger_s of real time; on a clock standing still the linger never ends.
    assert not sink.sent.wait(3 * LINGER_S), "a partial batch was sent before its linger was over"
    clock.now += LINGER_S - 0.125
    assert not sink.sent.wait(2 * LINGER_S), "a partial batch was sent before its linger was over"

    clock.now += 0.125  # the linger is over: no more events, and the run is not ending
    assert sink.sent.wait(30), "a partial batch was not sent once its linger was over"
    assert sink.batches == [[r.event_id for recs in added.values() for r in recs]]  # one batch, both streams

    shipper.finish(timeout_s=30)
    assert len(sink.batches) == 1  # nothing was left for the end of the run
    assert {s: store.load(s).state.delivered_total for s in added} == {"user/a": 3, "user/b": 2}


class LakeSink(RecordingSink):
    linger_s = 4 * LINGER_S  # a data lake's sink asks for fewer, larger objects


def test_a_sink_asking_for_a_longer_linger_gets_it(tmp_path):
    clock, sink = StillClock(), LakeSink()
    shipper = Shipper(
        sink,
        LocalQuarantine(str(tmp_path)),
        MemoryStore(),
        window_us=WINDOW_US,
        linger_s=LINGER_S,
        clock=clock,
    )
    recs = records("a@example.com", 2)
    assert shipper.add("user/a", recs, events(recs), StreamState(), None) is None

    clock.now += 2 * LINGER_S  # past the run's linger, not the sink's
    assert not sink.sent.wait(3 * LINGER_S), "the batch did not wait the linger its sink asked for"
    clock.now += 2 * LINGER_S
    assert sink.sent.wait(30), "the batch was not sent once the sink's linger was over"
    shipper.finish(timeout_s=30)
    assert sink.batches == [[r.event_id for r in recs]]
