"""More than a page of records dated past the clock, read in time windows: each pass costs about the
pages they fill (they are read apart from the present, in one open-ended window), not a halving of
the open window down to one second; each record ships once and none of the present is lost."""

from __future__ import annotations

from collections import Counter

import pytest

from forwarder.records import event_id
from forwarder.timeutil import format_us, now_us, parse_iso
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import make_records
from tests.pipeline.test_strategy_property import FakeService, _limits, dated_9999, run_with


@pytest.mark.parametrize("same_second", [False, True], ids=["days-apart", "one-second"])
def test_a_stream_holding_pages_of_future_records_costs_about_those_pages_a_run(same_second):
    """Before: 36 calls in the run after the first (the open window halved to a second, then paged
    through). Now: the order learnt, the open window (1, full of 9999), the present (1), and the
    five pages the 95 records of 9999 fill. Learning the order takes one call, or the five pages of
    one second answered newest-first, which look oldest-first until the next second."""
    present = make_records(list(range(0, 3000, 300)), now_us() - 3600 * 1_000_000)  # 10: part of a page of 20
    api = FakeService("desc", True, True)
    api.records = present + dated_9999(95, same_second)
    store, sink = MemoryStore(), MemorySink()
    first = run_with(api, 20, store, sink, _limits())
    assert first.ok, first.error
    assert first.strategy == "time-windows" and first.future == 95 and first.new == 105
    assert parse_iso(first.watermark) < now_us() + 600 * 1_000_000
    api.records.append(make_records([0], now_us() - 1_000_000)[0])
    second = run_with(api, 20, store, sink, _limits())  # the records of 9999 are read again
    assert second.ok and second.new == 1 and second.future == 0
    assert Counter(sink.delivered) == Counter(event_id(r) for r in api.records)
    assert second.api_calls <= (5 if same_second else 1) + 1 + 1 + 5


def test_a_run_of_many_passes_pays_about_the_future_pages_once_more_than_without_them():
    """A cap of 40 records a pass. Against the same trail without them (measured here): 45 records
    of 9999 cost one pass more and their 3 pages in the passes that reach them, 7 to 9 calls in all
    wherever the look-back window falls; before, 18 to 30 (each open window halved to a second)."""
    base = now_us() - 3600 * 1_000_000
    calls = []
    for future in (0, 45):
        api = FakeService("desc", True, True)
        api.records = make_records(list(range(0, 3000, 20)), base) + dated_9999(future)  # 150 and those
        sink = MemorySink()
        report = run_with(api, 20, MemoryStore(), sink, _limits(cap=40))
        assert report.ok, report.error
        assert report.future == future and Counter(sink.delivered) == Counter(map(event_id, api.records))
        calls.append(report.api_calls)
    assert calls[1] - calls[0] <= 10


@pytest.mark.parametrize("service", [("desc", True, True), ("random", True, False)])
def test_the_present_is_whole_however_many_records_lie_past_it(service):
    """Records right before, at and after the clock plus skew (where the present's windows end and
    the future's begins) come once each: none falls between the two, none in both."""
    now = now_us()
    edge = [now + d * 1_000_000 for d in (-2, 0, 1, 299, 300, 301, 302, 900)]
    records = make_records([0] * len(edge), 0)
    for record, at in zip(records, edge):
        record["created_at"] = format_us(at)
    api = FakeService(*service)
    api.records = records + dated_9999(30) + make_records(list(range(10)), now_us() - 3600 * 1_000_000)
    sink = MemorySink()
    report = run_with(api, 10, MemoryStore(), sink, _limits())
    assert report.ok, report.error
    assert Counter(sink.delivered) == Counter(event_id(r) for r in api.records)
