"""Each stream's report has one writer at a time: its stream's thread while the stream runs, then the
thread that called ``run_streams`` once the run's batches are settled. The shipper's sender and state
writer threads tally what they did apart (``delivery.shipper.Outcome``) and never touch a report.

The run lease is renewed while the run works, and a lost lease stops the run.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Dict, List, Sequence, Tuple

import pytest

from forwarder.errors import LeaseHeld
from forwarder.events import Event, Rejection, SendResult
from forwarder.observer import RunObserver
from forwarder.pipeline import run_stream, run_streams
from forwarder.quarantine import LocalQuarantine
from forwarder.reading.select import Limits
from forwarder.records import event_id
from forwarder.report import RunReport, StreamReport
from forwarder.streams import Stream
from forwarder.timeutil import now_us
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import ListSource, make_records, run_context

STREAMS = [Stream("user", f"u{i}@example.com") for i in range(8)]


class PoisonSink:
    """Accepts every event but those in ``poison``, which it rejects for good (they are quarantined)."""

    name = "poison"
    max_batch_events, max_batch_bytes, max_in_flight = 4, 10**6, 2

    def __init__(self, poison: Sequence[str]) -> None:
        self.poison = set(poison)

    def send(self, batch: Sequence[Event]) -> SendResult:
        rejected = [Rejection(e, "poison") for e in batch if e.id in self.poison]
        return SendResult(len(batch) - len(rejected), rejected)

    def close(self) -> None:
        pass


@pytest.fixture
def writes(monkeypatch) -> List[Tuple[int, str, threading.Thread]]:
    """Every write of a StreamReport field, in order: (the report's id, the field, the writing thread)."""
    seen: List[Tuple[int, str, threading.Thread]] = []

    def recording(report: StreamReport, name: str, value: object) -> None:
        seen.append((id(report), name, threading.current_thread()))
        object.__setattr__(report, name, value)

    monkeypatch.setattr(StreamReport, "__setattr__", recording)
    return seen


def writers(writes: List[Tuple[int, str, threading.Thread]]) -> Dict[int, List[threading.Thread]]:
    """Per report, its writing threads in the order they wrote, each run of writes by one thread once."""
    found: Dict[int, List[threading.Thread]] = defaultdict(list)
    for report, _, thread in writes:
        if not found[report] or found[report][-1] is not thread:
            found[report].append(thread)
    return found


def parts(tmp_path, streams: Sequence[Stream]):
    """Five records per stream, the first of each rejected by the sink for good, and a record that
    the first two streams' trails both hold (one of them ships it, the other skips a copy)."""
    base_us = now_us() - 3600 * 1_000_000
    records = [r for s in streams for r in make_records(list(range(5)), base_us, s.name)]
    shared = make_records([7], base_us, streams[0].name)[0]
    trails = {id(shared): {streams[0].name, streams[1].name}}
    poison = [event_id(r) for r in records[::5]]
    source = ListSource([*records, shared], "asc", 3, 0, trails=trails)
    return source, PoisonSink(poison), LocalQuarantine(str(tmp_path))


def test_a_runs_reports_are_written_by_their_stream_threads_then_by_the_runs_thread_only(tmp_path, writes):
    source, sink, quarantine = parts(tmp_path, STREAMS)
    limits = Limits(86400, 3600, 100)
    ctx = run_context(source, MemoryStore(), sink, quarantine, limits, STREAMS, linger_s=0.0)
    report = RunReport(started="now")
    run_streams(ctx, STREAMS, 4, report)

    me = threading.current_thread()
    by_report = writers(writes)
    assert len(by_report) == len(STREAMS)
    for threads in by_report.values():
        # created and filled by one stream thread, then merged into here: never by a sender or writer
        assert threads[0].name.startswith("stream") and threads[1:] == [me], [t.name for t in threads]
    assert report.ok
    assert [(s.new, s.shipped, s.quarantined) for s in report.streams[2:]] == [(5, 4, 1)] * (len(STREAMS) - 2)
    first, second = report.streams[:2]
    assert first.new + second.new == 11 and first.skipped + second.skipped == 1  # the shared record once
    assert first.shipped + second.shipped == 9 and first.quarantined == second.quarantined == 1


def test_run_stream_alone_writes_its_report_on_its_callers_thread_only(tmp_path, writes):
    stream = STREAMS[0]
    source, sink, quarantine = parts(tmp_path, [stream, STREAMS[1]])
    limits = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=2)  # several passes
    ctx = run_context(source, MemoryStore(), sink, quarantine, limits, [stream])
    report = run_stream(ctx, stream)

    assert list(writers(writes).values()) == [[threading.current_thread()]]
    assert report.ok and report.passes >= 3 and (report.new, report.shipped, report.quarantined) == (6, 5, 1)


class Told(RunObserver):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shipped_by: Dict[str, int] = defaultdict(int)

    def shipped(self, stream: str, count: int) -> None:
        with self.lock:
            self.shipped_by[stream] += count


def test_the_observer_is_told_what_the_sink_accepted_and_it_adds_up_to_the_reports(tmp_path):
    source, sink, quarantine = parts(tmp_path, STREAMS)
    told = Told()
    ctx = run_context(
        source, MemoryStore(), sink, quarantine, Limits(86400, 3600, 100), STREAMS, observer=told
    )
    report = RunReport(started="now")
    run_streams(ctx, STREAMS, 4, report)
    assert report.ok and told.shipped_by == {s.stream: s.shipped for s in report.streams}


LEASE_STREAMS = [Stream("user", f"u{i}@example.com") for i in range(4)]


class CountingLease:
    owner = "test"

    def __init__(self, lose_after: int = 10**9) -> None:
        self.renewals = 0
        self.lose_after = lose_after

    def renew(self) -> None:
        self.renewals += 1
        if self.renewals > self.lose_after:
            raise LeaseHeld("taken over by another run")

    def release(self) -> None:
        pass


def context(lease, tmp_path):
    from forwarder.timeutil import now_us

    base_us = now_us() - 3600 * 1_000_000
    records = [r for s in LEASE_STREAMS for r in make_records(list(range(10)), base_us, s.name)]
    source, sink = ListSource(records, "asc", 5, 0), MemorySink(max_batch_events=3)
    quarantine, limits = LocalQuarantine(str(tmp_path)), Limits(86400, 3600, 100)
    # lease_ttl_s=0: renew at every opportunity
    return run_context(
        source, MemoryStore(), sink, quarantine, limits, LEASE_STREAMS, lease=lease, lease_ttl_s=0
    )


def test_the_lease_is_renewed_between_streams_and_batches(tmp_path):
    lease = CountingLease()
    report = RunReport(started="now")
    ctx = context(lease, tmp_path)
    run_streams(ctx, LEASE_STREAMS, 1, report)
    batches = len(ctx.sink.batches)  # type: ignore[attr-defined]
    assert report.ok and batches >= 40 // 3
    assert lease.renewals >= len(LEASE_STREAMS) + batches  # between streams, and after every accepted batch


def test_a_lost_lease_stops_the_run(tmp_path):
    lease = CountingLease(lose_after=2)
    report = RunReport(started="now")
    with pytest.raises(LeaseHeld):
        run_streams(context(lease, tmp_path), LEASE_STREAMS, 1, report)
    assert len(report.streams) < len(LEASE_STREAMS)
