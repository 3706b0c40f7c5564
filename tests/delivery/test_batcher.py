"""The pure parts of delivery: how streams share batches."""

from __future__ import annotations

from typing import List

from hypothesis import given
from hypothesis import strategies as st

from forwarder.delivery.batcher import Batch, Batcher
from forwarder.events import Event
from forwarder.sinks.base import batches
from tests.delivery.helpers import add, records


@given(
    streams=st.lists(st.integers(0, 40), min_size=1, max_size=30),
    max_events=st.integers(1, 50),
    max_bytes=st.integers(5, 400),
)
def test_streams_share_batches_within_the_limits_and_keep_their_order(streams, max_events, max_bytes):
    batcher = Batcher(max_events, max_bytes)
    closed: List[Batch] = []
    sent = {}
    for n, count in enumerate(streams):
        recs = records(f"u{n}", count)
        sent[f"u{n}"] = [r.event_id for r in recs]
        closed += add(batcher, f"u{n}", recs)
    last = batcher.cut()
    closed += [last] if last else []
    total = sum(streams)
    assert sum(len(b.events) for b in closed) == total
    for batch in closed:
        assert 0 < len(batch.events) <= max_events
        assert batch.size <= max_bytes or len(batch.events) == 1  # an oversized event travels alone
        assert [e.id for e in batch.events] == [r.event_id for s in batch.segments for r in s.records]
    # A full batch is closed at once: only the limits, not the number of streams, set the count.
    per_batch = min(max_events, max(1, max_bytes // 10))
    assert len(closed) == -(-total // per_batch)
    for stream, ids in sent.items():
        got = [r.event_id for b in closed for s in b.segments if s.stream == stream for r in s.records]
        assert got == ids


@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=40),
    max_events=st.integers(1, 8),
    max_bytes=st.integers(1, 100),
)
def test_a_run_splits_its_batches_where_a_sink_splits_its_requests(sizes, max_events, max_bytes):
    """One rule: the shared batches of one stream are what ``sinks.base.batches`` makes of its events."""
    recs = records("u", len(sizes))
    evs = [Event(r.event_id, r.ts_us, b"x" * size) for r, size in zip(recs, sizes)]
    batcher = Batcher(max_events, max_bytes)
    closed = batcher.add("u", recs, evs, now=0.0)
    last = batcher.cut()
    closed += [last] if last else []
    assert [b.events for b in closed] == list(batches(evs, max_events, max_bytes))


def test_a_failed_stream_leaves_the_open_batch():
    batcher = Batcher(10, 10_000)
    add(batcher, "a", records("a", 2))
    add(batcher, "b", records("b", 2))
    batcher.drop("a")
    batch = batcher.cut()
    assert batch is not None and batch.streams() == ["b"] and len(batch.events) == 2
