"""The delivery guarantee as a property: whatever the order, paging, duplicates, ties, late records,
refused batches and crashes between send and commit, every record is delivered, and nothing twice
except the one batch a crash interrupted."""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from typing import Any, List, Optional

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder.events import Event
from forwarder.normalize import NormalizeOptions
from forwarder.pipeline import Limits, RunContext, run_stream
from forwarder.quarantine import LocalQuarantine
from forwarder.records import event_id
from forwarder.streams import Ownership, Stream
from forwarder.timeutil import format_us, now_us
from tests.fakes import MemorySink, MemoryStore

STREAM = Stream("user", "alice@example.com")


class Crash(BaseException):
    """A process death: nothing in the forwarder may catch it."""


class CrashingStore(MemoryStore):
    def __init__(self, crash_on_commit: Optional[int]) -> None:
        super().__init__()
        self.crash_on_commit = crash_on_commit
        self.commits = 0

    def commit(self, key, state, version):
        self.commits += 1
        if self.commits == self.crash_on_commit:
            raise Crash()
        return super().commit(key, state, version)


class ListSource:
    def __init__(self, records: List[dict], order: str, page_size: int, repeat_every: int) -> None:
        self.records, self.order, self.page_size, self.repeat_every = records, order, page_size, repeat_every

    def pages(self, stream, start_us, outcome):
        items = list(self.records)
        if self.order == "asc":
            items.sort(key=lambda r: r["created_at"])
        elif self.order == "desc":
            items.sort(key=lambda r: r["created_at"], reverse=True)
        if self.repeat_every:  # the service returns some records twice
            items = items + items[:: self.repeat_every]
        for i in range(0, len(items), self.page_size):
            yield items[i : i + self.page_size]


def formatter(record, options) -> Event:
    return Event(record.event_id, record.ts_us, b"{}")


def make_records(offsets: List[int], base_us: int) -> List[dict]:
    # Offsets are seconds; a small range forces many equal timestamps.
    return [
        {
            "action": "user.login",
            "filterable_action": "user.login",
            "user": "alice@example.com",
            "object": "alice@example.com",
            "changes": {"n": i},
            "created_at": format_us(base_us + off * 1_000_000),
        }
        for i, off in enumerate(offsets)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offsets=st.lists(st.integers(0, 40), min_size=1, max_size=60),
    arrivals=st.data(),
    runs=st.integers(1, 4),
    order=st.sampled_from(["asc", "desc", "as-is"]),
    page_size=st.integers(1, 25),
    repeat_every=st.sampled_from([0, 1, 3]),
    batch_events=st.integers(1, 7),
    cap=st.integers(1, 30),
    fail_sends=st.sets(st.integers(1, 12), max_size=3),
    crash_on_commit=st.one_of(st.none(), st.integers(1, 10)),
)
def test_every_record_delivered_once(
    offsets, arrivals, runs, order, page_size, repeat_every, batch_events, cap, fail_sends, crash_on_commit
):
    base_us = now_us() - 3600 * 1_000_000
    records = make_records(offsets, base_us)
    # Each record becomes visible at some run: later ones model late-arriving records, which
    # may be older than records already delivered (the look-back window covers them).
    arrive = [arrivals.draw(st.integers(0, runs - 1)) for _ in records]
    store = CrashingStore(crash_on_commit)
    sink = MemorySink(max_batch_events=batch_events, fail_sends=fail_sends)
    crashed_batches: List[List[str]] = []
    limits = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=cap)
    quarantine = LocalQuarantine(tempfile.mkdtemp())

    def one_run(visible: List[dict]) -> None:
        ctx = RunContext(
            source=ListSource(visible, order, page_size, repeat_every),
            store=store,
            sink=sink,
            formatter=formatter,
            quarantine=quarantine,
            limits=limits,
            ownership=Ownership([STREAM], time.time()),
            options=NormalizeOptions(ingest_time_us=0),
        )
        try:
            run_stream(ctx, STREAM)
        except Crash:  # the batch just sent was never committed
            crashed_batches.append(sink.batches[-1])

    for run in range(runs):
        one_run([r for r, a in zip(records, arrive) if a <= run])
    # Enough clean runs to drain whatever failures and caps left behind.
    store.crash_on_commit = None
    sink.fail_sends = set()
    for _ in range(len(records) // max(1, min(cap, batch_events)) + 3):
        one_run(records)

    expected = Counter(event_id(r) for r in records)
    delivered = Counter(sink.delivered)
    assert set(delivered) == set(expected), "a record was lost"
    allowed_extra = Counter(i for batch in crashed_batches for i in batch)
    for rid, count in delivered.items():
        assert count <= 1 + allowed_extra[rid], f"{rid} delivered {count} times"


def test_late_record_beyond_window_is_not_new() -> None:
    """The documented limit: a record older than watermark minus window is skipped, not re-sent."""
    base_us = now_us() - 3600 * 1_000_000
    early, late = make_records([100, 0], base_us)
    store, sink = MemoryStore(), MemorySink()
    limits = Limits(initial_lookback_s=86400, window_s=10, max_records_per_pass=100)

    def run(visible: List[Any]):
        ctx = RunContext(
            source=ListSource(visible, "asc", 10, 0),
            store=store,
            sink=sink,
            formatter=formatter,
            quarantine=LocalQuarantine("unused"),
            limits=limits,
            ownership=Ownership([STREAM], time.time()),
            options=NormalizeOptions(ingest_time_us=0),
        )
        return run_stream(ctx, STREAM)

    run([early])
    report = run([early, late])
    assert sink.delivered == [event_id(early)]
    assert report.skipped == 2 and report.new == 0
