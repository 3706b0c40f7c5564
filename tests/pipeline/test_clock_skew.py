"""Runs whose clock is wrong (days behind, a day ahead): the committed watermark never goes down and
no record is sent twice or lost, whatever each run's clock says. Before: a run with the clock two
days behind lowered the watermark to its clock at load and sent those two days again."""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import datetime, timedelta
from typing import Iterator, List, Optional

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder import timeutil
from forwarder.reading.select import Limits
from forwarder.records import event_id
from forwarder.timeutil import now_us, parse_iso
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import make_records
from tests.pipeline.test_strategy_property import STREAM, FakeService, run_with

DAY_S = 86400
LIMITS = Limits(initial_lookback_s=5 * DAY_S, window_s=3600, max_records_per_pass=1000)


@contextlib.contextmanager
def clock_off_by(seconds: int) -> Iterator[None]:
    """Every ``timeutil.now_us`` (the run's clock: selection, the watermark's ceiling, time windows)
    ``seconds`` off the real time."""

    class Skewed(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            return datetime.now(tz) + timedelta(seconds=seconds)

    real = timeutil.datetime
    timeutil.datetime = Skewed  # type: ignore[misc]
    try:
        yield
    finally:
        timeutil.datetime = real  # type: ignore[misc]


def committed_watermark(store: MemoryStore) -> Optional[int]:
    doc = store.docs.get(STREAM.key)
    return None if doc is None or doc["watermark"] is None else parse_iso(doc["watermark"])


def test_a_run_with_the_clock_two_days_behind_keeps_the_watermark_and_sends_nothing_again():
    base = now_us() - 3 * DAY_S * 1_000_000
    api = FakeService("asc", True, True)
    api.records = make_records(list(range(0, 3 * DAY_S, 3600)), base)  # one an hour for three days
    store, sink = MemoryStore(), MemorySink()
    assert run_with(api, 50, store, sink, LIMITS).ok
    before = committed_watermark(store)
    with clock_off_by(-2 * DAY_S):
        behind = run_with(api, 50, store, sink, LIMITS)
    assert behind.ok and behind.new == 0
    assert committed_watermark(store) == before
    assert len(sink.delivered) == len(api.records)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    skews=st.lists(st.integers(-3 * DAY_S, DAY_S), min_size=1, max_size=5),
    arrivals=st.lists(st.lists(st.integers(0, 1800), max_size=6), min_size=5, max_size=5),
    service=st.sampled_from([("asc", True, True), ("desc", True, True), ("random", True, False)]),
)
def test_whatever_each_runs_clock_says_the_watermark_never_goes_down_and_each_record_goes_once(
    skews: List[int], arrivals: List[List[int]], service
):
    """A first run with a true clock, then runs with clocks off by ``skews``; before each, records
    dated up to half an hour ago arrive (inside the look-back window: none is late by the rules)."""
    real_now = now_us()
    api = FakeService(*service)
    api.records = make_records(list(range(0, 3 * DAY_S, 5400)), real_now - 3 * DAY_S * 1_000_000)
    store, sink = MemoryStore(), MemorySink()
    assert run_with(api, 20, store, sink, LIMITS).ok
    watermarks = [committed_watermark(store)]
    for n, skew in enumerate(skews):
        ago = [-a for a in arrivals[n]]
        api.records += make_records(ago, now_us(), user=STREAM.name)
        for i, record in enumerate(api.records[-len(ago) :] if ago else []):
            record["changes"] = {"run": n, "i": i}  # distinct from every earlier record
        with clock_off_by(skew):
            assert run_with(api, 20, store, sink, LIMITS).ok
        watermarks.append(committed_watermark(store))
    assert all(a is not None and b is not None and a <= b for a, b in zip(watermarks, watermarks[1:]))
    counts = Counter(sink.delivered)
    assert all(count == 1 for count in counts.values()), "a record was sent twice"
    assert set(counts) == {event_id(r) for r in api.records}, "a record was never sent"
