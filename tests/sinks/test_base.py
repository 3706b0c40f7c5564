"""forwarder.sinks.base: properties of batches, the grouping every sink relies on; NDJSON lines."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from forwarder.events import Event
from forwarder.sinks.base import batches, ndjson_line
from tests.sinks import helpers

# Small numbers, so that batches land exactly on their bounds often.
sizes = st.lists(st.integers(min_value=0, max_value=40), max_size=40)
limits = st.tuples(st.integers(min_value=1, max_value=8), st.integers(min_value=1, max_value=100))


def make(body_sizes: list[int]) -> list[Event]:
    return [Event(f"{n:064x}", n, b"x" * size) for n, size in enumerate(body_sizes)]


@given(sizes, limits)
def test_order_kept_nothing_lost_nothing_duplicated(body_sizes, limit):
    events = make(body_sizes)
    grouped = list(batches(events, *limit))
    assert [event for batch in grouped for event in batch] == events
    assert all(grouped)


@given(sizes, limits)
@example([1, 1], (5, 4))  # two events filling the byte bound exactly
@example([1, 1], (5, 3))  # one byte over it
def test_bounds_respected_and_an_oversized_event_travels_alone(body_sizes, limit):
    max_events, max_bytes = limit
    for batch in batches(make(body_sizes), max_events, max_bytes):
        assert len(batch) <= max_events
        if len(batch) > 1:
            assert sum(len(event.body) + 1 for event in batch) <= max_bytes
        for event in batch:
            if len(event.body) + 1 > max_bytes:
                assert batch == [event]


@given(sizes, limits)
def test_batches_are_as_full_as_the_bounds_allow(body_sizes, limit):
    max_events, max_bytes = limit
    grouped = list(batches(make(body_sizes), max_events, max_bytes))
    for batch, following in zip(grouped, grouped[1:]):
        used = sum(len(event.body) + 1 for event in batch)
        assert len(batch) == max_events or used + len(following[0].body) + 1 > max_bytes


def test_a_line_is_the_body_and_a_newline():
    assert ndjson_line(helpers.event(1)) == helpers.event(1).body + b"\n"
    assert ndjson_line(helpers.CEF) == b"CEF:0|V|P|1|a|b|3|msg=x\n"


def test_stray_line_breaks_never_split_a_record():
    text = Event("t" * 64, 0, b"CEF:0|V|P|1|a|b|3|msg=one\r\ntwo", is_json=False)
    pretty = Event("j" * 64, 0, b'{\n  "a": "x"\r\n}')

    assert ndjson_line(text) == b"CEF:0|V|P|1|a|b|3|msg=one\\r\\ntwo\n"
    assert json.loads(ndjson_line(pretty)) == {"a": "x"}
    assert ndjson_line(pretty).count(b"\n") == 1
