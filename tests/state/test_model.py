from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forwarder.errors import StateError
from forwarder.state.model import SCHEMA_VERSION, StreamState

from .contract import HOUR_US, T0_US, make_record

WINDOW = HOUR_US
SECOND = 1_000_000


def test_first_run_starts_at_the_floor():
    state = StreamState()
    assert not state.is_new(make_record("old", T0_US - 1), floor_us=T0_US, window_us=WINDOW)
    assert state.is_new(make_record("edge", T0_US), floor_us=T0_US, window_us=WINDOW)
    assert state.is_new(make_record("later", T0_US + 1), floor_us=T0_US, window_us=WINDOW)


def test_equal_timestamp_at_the_batch_boundary_is_new_until_delivered():
    a, b = make_record("a", T0_US), make_record("b", T0_US)
    state = StreamState().advance([a], WINDOW)
    assert state.watermark_us == T0_US
    assert not state.is_new(a, 0, WINDOW)
    assert state.is_new(b, 0, WINDOW)
    assert not state.advance([b], WINDOW).is_new(b, 0, WINDOW)


def test_late_record_inside_the_window_is_new_and_outside_is_old():
    state = StreamState().advance([make_record("head", T0_US)], WINDOW)
    assert state.is_new(make_record("late", T0_US - WINDOW // 2), 0, WINDOW)
    assert state.is_new(make_record("edge", T0_US - WINDOW), 0, WINDOW)
    assert not state.is_new(make_record("too-late", T0_US - WINDOW - 1), 0, WINDOW)
    assert state.is_new(make_record("newer", T0_US + 1), 0, WINDOW)


def test_advance_prunes_ids_that_fell_out_of_the_window():
    old, kept = make_record("old", T0_US), make_record("kept", T0_US + 10 * SECOND)
    state = StreamState().advance([old, kept], WINDOW)
    assert set(state.seen) == {"old", "kept"}
    state = state.advance([make_record("head", T0_US + WINDOW + 5 * SECOND)], WINDOW)
    assert set(state.seen) == {"kept", "head"}
    assert not state.is_new(old, 0, WINDOW)  # pruned, yet still old: it is behind the window


def test_advance_counts_and_leaves_the_original_unchanged():
    base = StreamState(delivered_total=5)
    after = base.advance([make_record("a", T0_US), make_record("b", T0_US - SECOND)], WINDOW)
    assert base == StreamState(delivered_total=5)
    assert after.watermark_us == T0_US
    assert after.delivered_total == 7
    assert StreamState().advance([], WINDOW) == StreamState()


def test_document_round_trip():
    state = StreamState(
        watermark_us=T0_US + 123_456,
        seen={"ab" * 32: T0_US + 123_456, "ü-id": T0_US - 7},
        delivered_total=42,
    )
    doc = state.to_doc("domain/bücher.example")
    assert doc["schema"] == SCHEMA_VERSION
    assert doc["stream"] == "domain/bücher.example"
    assert doc["watermark"] == "2026-01-01T00:00:00.123456Z"
    assert StreamState.from_doc(doc, "here") == state
    assert StreamState.from_doc(StreamState().to_doc("k"), "here") == StreamState()


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "not a JSON object"),
        ({"schema": SCHEMA_VERSION + 1}, "schema version"),
        ({"stream": "k"}, "schema version"),
        ({"schema": SCHEMA_VERSION, "watermark": "soon"}, "corrupt"),
        ({"schema": SCHEMA_VERSION, "seen": {"a": 5}}, "corrupt"),
        ({"schema": SCHEMA_VERSION, "delivered_total": "many"}, "corrupt"),
    ],
)
def test_unusable_documents_raise_state_error_naming_the_location(doc, message):
    with pytest.raises(StateError, match=message) as err:
        StreamState.from_doc(doc, "/var/lib/forwarder/x.json")
    assert "/var/lib/forwarder/x.json" in str(err.value)


# Timestamps from a handful of seconds, so many records tie; windows from none to wider than the span.
RECORD_TIMES = st.lists(st.integers(min_value=0, max_value=8), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    times=RECORD_TIMES,
    window_s=st.integers(min_value=0, max_value=10),
    batch_sizes=st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=40),
)
def test_each_record_is_new_exactly_until_it_is_delivered(times, window_s, batch_sizes):
    records = sorted(
        (make_record(f"r{n:03d}", T0_US + t * SECOND) for n, t in enumerate(times)),
        key=lambda r: r.sort_key,
    )
    window, floor = window_s * SECOND, T0_US
    state, done, sizes = StreamState(), 0, iter(batch_sizes)
    while done < len(records):
        size = next(sizes, 1)
        batch = records[done : done + size]
        assert all(state.is_new(r, floor, window) for r in records[done:])
        assert not any(state.is_new(r, floor, window) for r in records[:done])
        state = StreamState.from_doc(state.advance(batch, window).to_doc("k"), "k")
        done += len(batch)
    assert not any(state.is_new(r, floor, window) for r in records)
    assert state.delivered_total == len(records)
