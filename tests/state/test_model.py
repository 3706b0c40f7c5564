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


def test_a_future_record_is_delivered_once_and_does_not_move_the_watermark():
    clock = T0_US
    future = make_record("from-9999", 253402300799 * SECOND)  # 9999-12-31T23:59:59Z
    state = StreamState(watermark_us=clock - HOUR_US).advance([future], WINDOW, ceiling_us=clock)
    assert state.watermark_us == clock - HOUR_US
    assert not state.is_new(future, 0, WINDOW)  # remembered: never sent twice
    assert state.is_new(make_record("next", clock + SECOND), 0, WINDOW)  # and hides nothing
    first = StreamState().advance([future], WINDOW, ceiling_us=clock)
    assert first.watermark_us is None and not first.is_new(future, 0, WINDOW)


@settings(max_examples=200, deadline=None)
@given(
    offsets=st.lists(st.integers(min_value=-2 * 3600, max_value=3 * 3600), min_size=1, max_size=40),
    future=st.lists(st.integers(min_value=3600, max_value=10**9), max_size=5),
    step=st.integers(min_value=60, max_value=1800),
)
def test_watermark_never_passes_the_clock_and_every_record_is_delivered_once(offsets, future, step):
    """Records appear when their created_at is reached (future-dated ones at once); runs every
    ``step`` seconds deliver what is new. Each record is delivered exactly once, the watermark stays
    within the clock plus the skew, and future-dated records never hide later ones."""
    from forwarder.state.model import FUTURE_SKEW_US

    ordinary = [make_record(f"r{i}", T0_US + off * SECOND) for i, off in enumerate(offsets)]
    ahead = [make_record(f"f{i}", T0_US + off * SECOND) for i, off in enumerate(future)]
    state, delivered = StreamState(), []
    clock = T0_US
    end = T0_US + 4 * 3600 * SECOND
    while clock <= end:
        ceiling = clock + FUTURE_SKEW_US
        visible = [r for r in ordinary if r.ts_us <= clock] + ahead
        new = sorted(
            (r for r in visible if state.is_new(r, T0_US - 3 * 3600 * SECOND, WINDOW)),
            key=lambda r: r.sort_key,
        )
        state = state.advance(new, WINDOW, ceiling_us=ceiling)
        delivered += [r.event_id for r in new]
        assert state.watermark_us is None or state.watermark_us <= ceiling
        clock += step * SECOND
    assert sorted(delivered) == sorted({r.event_id for r in ordinary + ahead})


def test_the_watermark_never_goes_down_whatever_the_clock_says():
    committed = StreamState(watermark_us=T0_US)
    two_days_behind = T0_US - 48 * HOUR_US
    late = [make_record("late", T0_US - 30 * 60 * SECOND), make_record("now", T0_US + SECOND)]
    state = committed.advance(late, WINDOW, ceiling_us=two_days_behind)
    assert state.watermark_us == T0_US  # neither lowered to that clock nor moved past it
    assert not any(state.is_new(r, 0, WINDOW) for r in late)  # both remembered: never sent twice


def test_quarantined_ids_are_remembered_and_age_out_without_counting_or_moving_the_watermark():
    state = StreamState().advance([make_record("a", T0_US)], WINDOW, quarantined={"q": T0_US + SECOND})
    assert state.seen == {"a": T0_US, "q": T0_US + SECOND}
    assert state.watermark_us == T0_US and state.delivered_total == 1
    alone = StreamState().advance([], WINDOW, quarantined={"q": T0_US})
    assert alone == StreamState(seen={"q": T0_US})  # no watermark yet: a first run's floor still holds
    state = state.advance([make_record("head", T0_US + WINDOW + 2 * SECOND)], WINDOW)
    assert set(state.seen) == {"head"}  # a window past the time it was kept: forgotten, as delivered ids
