"""The read strategies as a property: whatever the service honours (order, start_date/end_date,
paging, an offset ceiling), the real TrailReader and pipeline deliver every record once across runs
with new records in between, and count their calls."""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from typing import Any, Dict, List, Optional, Union

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from forwarder.api.client import AUDITS_PATH
from forwarder.delivery.claims import Claims
from forwarder.errors import ApiError
from forwarder.normalize import NormalizeOptions
from forwarder.pipeline import RunContext, run_stream
from forwarder.quarantine import LocalQuarantine
from forwarder.reading.pages import SMALLEST_CAP
from forwarder.reading.select import Limits
from forwarder.reading.trail import TrailReader
from forwarder.records import event_id
from forwarder.timeutil import format_us, now_us, parse_iso
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import STREAM, formatter, make_records


class FakeService:
    """The audits endpoint at the client's interface (``audits``/``sends``), in memory.

    ``order``: "asc" honours sort, "desc" always answers newest-first, "random" answers in a new
    order on every call. ``paging``: True honours limit and offset, "limit" honours limit but not
    offset (every page is the first page again), False neither. A service in random order that
    pages (or takes limit) but ignores time bounds cannot be read completely by any client, so the
    tests leave those out. A service that pages may cut its pages at ``page_cap`` records whatever
    the limit asked, and answer a request without a limit with its first ``default_size`` records.
    """

    def __init__(
        self,
        order: str,
        time_bounds: bool,
        paging: Union[bool, str],
        max_offset: Optional[int] = None,
        seed: int = 0,
        page_cap: Optional[int] = None,
        default_size: Optional[int] = None,
    ) -> None:
        self.records: List[Dict[str, Any]] = []
        self.order, self.time_bounds, self.paging, self.max_offset = order, time_bounds, paging, max_offset
        self.page_cap, self.default_size = page_cap, default_size
        self.calls = 0
        self.rng = random.Random(seed)

    def sends(self, path: str, parameter: str) -> bool:
        return True

    def audits(self, stream: Any, optional: Dict[str, Any], limit: Any, offset: Any) -> List[Any]:
        return self.page(AUDITS_PATH, "audits", {}, optional, limit, offset)

    def page(self, path, plural, base, optional, limit, offset) -> List[Any]:
        self.calls += 1
        items = sorted(self.records, key=lambda r: r["created_at"])
        if self.time_bounds and "start_date" in optional:
            items = [r for r in items if r["created_at"] >= _canonical(optional["start_date"])]
        if self.time_bounds and "end_date" in optional:
            items = [r for r in items if r["created_at"] <= _canonical(optional["end_date"])]
        if self.order == "desc":
            items.reverse()
        elif self.order == "random":
            self.rng.shuffle(items)
        if self.paging and limit is not None:
            if self.max_offset is not None and offset and offset > self.max_offset:
                raise ApiError("offset must be at most the ceiling", 400)
            start = 0 if self.paging == "limit" else offset
            items = items[start : start + min(limit, self.page_cap or limit)]
        elif self.paging and self.default_size is not None:
            items = items[: self.default_size]
        return items


FAR_FUTURE = format_us(parse_iso("9999-12-31T23:59:59Z"))
DAY = 86400 * 1_000_000


def dated_9999(count: int, same_second: bool = False) -> List[Dict[str, Any]]:
    """``count`` records past the clock: on days of the year 9999, or all in its last second."""
    records = make_records(list(range(count)), 0)
    for n, record in enumerate(records):
        first_day = parse_iso("9999-01-01T00:00:00Z")
        record.update(
            changes={"future": n}, created_at=FAR_FUTURE if same_second else format_us(first_day + n * DAY)
        )
    return records


def _us(record: Dict[str, Any]) -> int:
    return parse_iso(record["created_at"])


def _canonical(text: str) -> str:
    return format_us(parse_iso(text))


def run_with(
    api: FakeService,
    page_limit: int,
    store: MemoryStore,
    sink: MemorySink,
    limits: Limits,
    sweep: bool = True,
) -> Any:
    """One run of the stream: a new TrailReader, as every run builds one. ``sweep``: the run re-reads
    the look-back window (a deep re-sweep, which finds the late records these tests add between
    runs); else it polls from the watermark minus the tie margin."""
    ctx = RunContext(
        source=TrailReader(api, page_limit, max_pages=10_000),  # type: ignore[arg-type]
        store=store,
        sink=sink,
        formatter=lambda: formatter,
        quarantine=LocalQuarantine(tempfile.mkdtemp()),
        limits=limits,
        claims=Claims.load(store, limits.window_s, limits.tie_margin_s),
        options=NormalizeOptions(ingest_time_us=0),
        reach_back_s=limits.window_s if sweep else None,
    )
    return run_stream(ctx, STREAM)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offsets=st.lists(st.integers(0, 400), min_size=1, max_size=120),
    arrivals=st.data(),
    runs=st.integers(1, 3),
    service=st.sampled_from(
        [
            ("asc", True, True),
            ("asc", False, True),
            ("asc", True, False),
            ("desc", True, True),
            ("desc", False, True),
            ("random", True, True),
            ("random", True, False),
            ("random", False, False),
            ("asc", True, "limit"),
            ("asc", False, "limit"),
            ("desc", True, "limit"),
            ("desc", False, "limit"),
            ("random", True, "limit"),
        ]
    ),
    page_limit=st.integers(1, 30),
    cap=st.integers(1, 40),
    max_offset=st.one_of(st.none(), st.integers(10, 60)),
    future=st.sampled_from([0, 1]) | st.integers(2, 45),  # records dated 9999: a page of them, or more
)
def test_every_record_once_whatever_the_service_honours(
    offsets, arrivals, runs, service, page_limit, cap, max_offset, future
):
    order, time_bounds, paging = service
    # Re-anchoring at an offset ceiling needs fewer records than the ceiling in any two seconds.
    crowd = max(Counter(o // 2 for o in offsets).values())  # records in the busiest two seconds
    assume(max_offset is None or crowd * 2 < max_offset)
    # A page of one re-anchored at the last record read holds that record again (start_date is
    # widened by a second): it cannot move on, and the stream fails naming FORWARDER_PAGE_LIMIT.
    assume(max_offset is None or page_limit > 1 or len(offsets) + future <= max_offset)
    # Without offset, start_date and end_date (whole seconds, widened by one and two) are the only
    # ways on: fewer records than a page in any five seconds (a crowd fails the stream with a
    # message, as test_a_crowd_of_a_page_in_two_seconds_fails_the_stream shows).
    per_second = Counter(offsets)
    # (any five seconds in a row: a window's bounds need not be centred on a record)
    busiest = max(sum(per_second[o + d] for d in range(5)) for o in range(min(offsets) - 4, max(offsets) + 1))
    assume(paging != "limit" or busiest < page_limit)
    # In a new order on every call, pages are only whole if a window fits one: no client can read
    # more records than a page holds inside the smallest window (a second) of such a service.
    assume(service != ("random", True, True) or crowd < page_limit)
    # Records past the clock are one window, never split (the service's order, or offset, pages it).
    assume((service != ("random", True, True) and paging != "limit") or future < page_limit)
    records = make_records(offsets, now_us() - 3600 * 1_000_000)
    records += dated_9999(future)  # shipped once and counted as future, whichever way the trail is read
    arrive = [arrivals.draw(st.integers(0, runs - 1)) for _ in records]
    api = FakeService(order, time_bounds, paging, max_offset if order == "asc" and time_bounds else None)
    store, sink = MemoryStore(), MemorySink(max_batch_events=7)
    limits = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=cap)

    counted = 0
    for run in range(runs):
        api.records = [r for r, a in zip(records, arrive) if a <= run]
        before = api.calls
        report = run_with(api, page_limit, store, sink, limits)
        assert report.ok, report.error
        assert report.api_calls == api.calls - before
        counted += report.future
    assert counted == future
    delivered = Counter(sink.delivered)
    assert set(delivered) == {event_id(r) for r in records}, "a record was lost"
    assert max(delivered.values()) == 1, "a record was delivered twice"
    if not paging and len(records) < page_limit:  # (a window holding exactly a page is split)
        # One request a pass, one more to learn the bounds; a short page of SMALLEST_CAP records or more
        # that came again past it may be cut at the service's own page size: one request for a single
        # record tells whether the service pages at all (if it does, the page is no proof of the end).
        assert report.api_calls <= 2 * report.passes + (len(records) >= SMALLEST_CAP)


def test_a_service_ignoring_start_date_and_offset_is_counted_call_for_call():
    """Hypothesis found it: past records dated 9999, a page asked from the anchor ignored both offset
    and start_date; the call was counted when made and again when the pass was read another way."""
    records = make_records([0] * 10, now_us() - 3600 * 1_000_000) + dated_9999(10)
    api = FakeService("asc", False, "limit")
    api.records = records
    store, sink = MemoryStore(), MemorySink(max_batch_events=7)
    limits = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=7)
    report = run_with(api, 20, store, sink, limits)
    assert report.ok, report.error
    assert report.api_calls == api.calls
    assert sorted(sink.delivered) == sorted(event_id(r) for r in records)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    offsets=st.lists(st.integers(0, 400), min_size=1, max_size=120),
    arrivals=st.lists(st.integers(0, 2), min_size=120, max_size=120),  # run of each record, modulo runs
    runs=st.integers(1, 3),
    order=st.sampled_from(["asc", "desc", "random"]),
    time_bounds=st.booleans(),
    paging=st.sampled_from([True, "limit"]),
    page_limit=st.integers(2, 30),
    page_cap=st.one_of(st.none(), st.integers(SMALLEST_CAP, 29)),
    default_size=st.one_of(st.none(), st.integers(1, 150)),
    cap=st.integers(1, 40),
)
@example(  # hypothesis found it: see test_a_short_newest_first_page_...
    offsets=[0] * 10 + [1],
    arrivals=[0] * 120,
    runs=1,
    order="desc",
    time_bounds=False,
    paging="limit",
    page_limit=11,
    page_cap=10,
    default_size=None,
    cap=1,
)
def test_pages_shorter_than_asked_lose_nothing(
    offsets, arrivals, runs, order, time_bounds, paging, page_limit, page_cap, default_size, cap
):
    """Pages cut by the service below the limit asked, and answers without a limit cut at a default
    size. A service that cannot be read whole may fail a run (its message says why); whatever it
    does, no record is delivered twice and no state passes a record it did not deliver. A service
    that honours offset, in a stable order, is read whole. (Pages cut shorter than SMALLEST_CAP are
    taken as the end: see PageSize.)"""
    assume(order != "random" or time_bounds)  # no client can read it whole (FakeService)
    # Nor one that ignores offset and cuts every answer, with a limit or without, at one size: a trail
    # of that size and a longer one answer alike (TrailReader._whole).
    assume(paging is True or page_cap is None or default_size != page_cap)
    records = make_records(offsets, now_us() - 3600 * 1_000_000)
    arrive = [a % runs for a in arrivals[: len(records)]]
    api = FakeService(order, time_bounds, paging, page_cap=page_cap, default_size=default_size)
    store, sink = MemoryStore(), MemorySink(max_batch_events=7)
    limits = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=cap)
    readable = paging is True and order != "random"
    for run in range(runs):
        api.records = [r for r, a in zip(records, arrive) if a <= run]
        was = store.load(STREAM.key).state.watermark_us
        report = run_with(api, page_limit, store, sink, limits)
        assert report.ok or not readable, report.error
        now = store.load(STREAM.key).state.watermark_us
        # The records the watermark moved past in this run (a record that came after the watermark
        # had passed it is late: the look-back window's, see test_every_record_once...).
        passed = {event_id(r) for r in api.records if now is not None and (was or 0) <= _us(r) < now}
        assert passed <= set(sink.delivered), "the state passed a record it did not deliver"
    delivered = Counter(sink.delivered)
    assert not delivered or max(delivered.values()) == 1, "a record was delivered twice"
    if readable:
        assert set(delivered) == {event_id(r) for r in records}, "a record was lost"


@given(count=st.integers(40, 400), page_limit=st.integers(5, 40), cap=st.integers(5, 120))
@settings(max_examples=60, deadline=None)
def test_an_oldest_first_backlog_costs_about_one_call_per_page(count, page_limit, cap):
    records = make_records(list(range(count)), now_us() - 3600 * 1_000_000)
    api = FakeService("asc", True, True)
    api.records = records
    sink = MemorySink()
    limits = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=cap)
    report = run_with(api, page_limit, MemoryStore(), sink, limits)
    assert report.ok and len(sink.delivered) == count
    assert report.strategy == "ascending+start_date"
    pages = count // page_limit + 1
    # Each pass re-reads at most its boundary page (and the second before the watermark).
    assert api.calls <= pages + 2 * report.passes
    assert report.passes <= count // cap + 2


class Scripted(FakeService):
    """A service that honours paging and time bounds, answering call ``n`` in the order
    ``orders[n]`` (indices into the oldest-first trail) while there are orders left, oldest-first
    after that; ``before_call`` runs before each call with its number (from 0)."""

    def __init__(self, records: List[Dict[str, Any]], *orders: List[int], before_call: Any = None) -> None:
        super().__init__("random", True, True)
        self.records, self.orders, self.before_call = records, list(orders), before_call
        self.rng = self  # type: ignore[assignment]

    def page(self, path, plural, base, optional, limit, offset) -> List[Any]:
        if self.before_call is not None:
            self.before_call(self.calls)
        return super().page(path, plural, base, optional, limit, offset)

    def shuffle(self, items: List[Any]) -> None:
        if self.orders:
            order = self.orders.pop(0)
            items[:] = [items[i] for i in order] + [r for i, r in enumerate(items) if i not in order]


def _one_run(api: FakeService, page_limit: int, cap: int, store: Optional[MemoryStore] = None) -> Any:
    sink = MemorySink(max_batch_events=7)
    limits = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=cap)
    return run_with(api, page_limit, store or MemoryStore(), sink, limits), sink


def test_a_shuffled_page_that_looks_oldest_first_and_a_repeat_on_the_next_are_read_again():
    """Hypothesis found it: offsets=[0,2,4], a new order on every call, page_limit=2, cap=2. Page 1
    came [0, 2] (oldest-first by chance), page 2 repeated 0: paging ended on "no new record", 4 was
    never read and the watermark went past it."""
    records = make_records([0, 2, 4], now_us() - 3600 * 1_000_000)
    api = Scripted(records, [0, 1, 2], [1, 2, 0])
    report, sink = _one_run(api, page_limit=2, cap=2)
    assert report.ok, report.error
    assert sorted(sink.delivered) == sorted(event_id(r) for r in records)
    assert report.strategy == "time-windows"  # read again, the other way
    assert report.api_calls == api.calls


def test_a_last_page_out_of_order_with_a_repeat_is_read_again():
    """25 records shown oldest-first on two pages, then the last page comes in another order and
    repeats a record: its count says it ends the trail, but record 20 was never read."""
    records = make_records(list(range(25)), now_us() - 3600 * 1_000_000)
    api = Scripted(
        records,
        list(range(25)),
        list(range(25)),
        [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 24, 3, 22, 23, 21],
    )
    report, sink = _one_run(api, page_limit=10, cap=100)
    assert report.ok, report.error
    assert sorted(sink.delivered) == sorted(event_id(r) for r in records)
    assert report.strategy == "time-windows"


def test_a_record_inserted_before_the_offset_costs_no_re_read_and_the_next_run_ships_it():
    """Oldest-first paging: a late record inserted before the offset shifts the next page by one,
    which repeats the last record read. That is not disorder: the pass goes on without a re-read,
    and the late record (older than the watermark) is the next run's, inside its look-back."""
    base = now_us() - 3600 * 1_000_000
    records = make_records(list(range(30)), base)
    late = make_records([3], base + 500_000, user=STREAM.name)[0]
    late["changes"] = {"n": "late"}
    api = Scripted(list(records), before_call=lambda n: api.records.append(late) if n == 2 else None)
    store = MemoryStore()
    first, sink = _one_run(api, page_limit=10, cap=100, store=store)
    assert first.ok and first.strategy == "ascending+start_date" and first.passes == 1
    assert api.calls == 4  # pages at 0, 10, 20 (repeating record 19), 30: no page read twice
    assert sorted(sink.delivered) == sorted(event_id(r) for r in records)
    second, later = _one_run(api, page_limit=10, cap=100, store=store)
    assert second.ok and later.delivered == [event_id(late)]


class Rotating(FakeService):
    """Pages and honours time bounds, but call ``n`` lists the trail rotated by ``n``: a new
    order on every call, deterministic."""

    def __init__(self, records: List[Dict[str, Any]]) -> None:
        super().__init__("random", True, True)
        self.records = records
        self.rng = self  # type: ignore[assignment]

    def shuffle(self, items: List[Any]) -> None:
        if items:
            turn = self.calls % len(items)
            items[:] = items[turn:] + items[:turn]


def test_a_second_holding_more_than_a_page_of_a_reordering_service_is_paged_until_whole():
    """Five records in one second, pages of four, a new order on every call: the page after the
    first repeats one of it and skips another. The window is paged again until five different
    records came, rather than passing a record it never saw."""
    records = make_records([10] * 5, now_us() - 3600 * 1_000_000)
    api = Rotating(records)
    report, sink = _one_run(api, page_limit=4, cap=10)
    assert report.ok, report.error
    assert report.strategy == "time-windows"
    assert sorted(sink.delivered) == sorted(event_id(r) for r in records)


class Hiding(FakeService):
    """Pages and honours time bounds, but any page past the first repeats the first record, so the
    fifth record of a second is never returned."""

    def page(self, path, plural, base, optional, limit, offset) -> List[Any]:
        items = super().page(path, plural, base, optional, limit, offset)
        return [self.records[0]] if offset and items else items


def test_a_second_that_never_comes_whole_fails_the_stream_and_ships_nothing():
    records = make_records([10] * 5, now_us() - 3600 * 1_000_000)
    api = Hiding("asc", True, True)
    api.records = records
    report, sink = _one_run(api, page_limit=4, cap=10)
    assert not report.ok and "raise FORWARDER_PAGE_LIMIT" in report.error
    assert sink.delivered == [] and report.watermark is None


def _limits(cap: int = 1000) -> Limits:
    return Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=cap)


def test_a_service_that_ignores_offset_is_read_by_re_anchoring_start_date():
    """limit, sort and start_date honoured, offset not: every page is the first page again. That
    page must neither end the pass as if the trail were read nor pass for disorder (which read the
    trail again in time windows, every run): start_date moves to the last created_at read instead,
    learnt once (one page asked in vain)."""
    records = make_records(list(range(0, 1000, 10)), now_us() - 3600 * 1_000_000)
    api = FakeService("asc", True, "limit")
    api.records = records
    store, sink = MemoryStore(), MemorySink()
    report = run_with(api, 30, store, sink, _limits())
    assert report.ok, report.error
    assert report.strategy == "ascending+start_date" and report.passes == 1
    assert sorted(sink.delivered) == sorted(event_id(r) for r in records)
    assert api.calls == report.api_calls <= 100 // 29 + 2
    idle = run_with(api, 30, store, sink, _limits())  # the look-back window holds every record
    assert idle.ok and idle.new == 0 and idle.strategy == "ascending+start_date"
    assert api.calls - report.api_calls <= 100 // 29 + 2


def test_each_call_an_offset_ceiling_refuses_is_counted():
    """A 400 past the ceiling is a request the service answered: api_calls counts it, as the
    service does (before, the re-anchored page was counted and the refusal was not)."""
    api = FakeService("asc", True, True, max_offset=10)
    api.records = make_records(list(range(0, 400, 10)), now_us() - 3600 * 1_000_000)
    sink = MemorySink()
    report = run_with(api, 3, MemoryStore(), sink, _limits())
    assert report.ok and len(sink.delivered) == 40
    assert report.api_calls == api.calls


@pytest.mark.parametrize("sweep", [True, False], ids=["sweep", "poll"])
def test_a_service_that_ignores_offset_and_start_date_is_read_unpaged(sweep):
    """Before, each run re-read the first page: 30 of 100 records shipped, and never the rest. A
    poll (from the watermark, inside the trail) learns start_date is ignored as a sweep does."""
    records = make_records(list(range(0, 1000, 10)), now_us() - 3600 * 1_000_000)
    api = FakeService("asc", False, "limit")
    api.records = records
    store, sink = MemoryStore(), MemorySink()
    for _ in range(2):
        report = run_with(api, 30, store, sink, _limits(cap=40), sweep)
        assert report.ok, report.error
    assert sorted(sink.delivered) == sorted(event_id(r) for r in records)


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_a_crowd_of_a_page_in_two_seconds_fails_the_stream(order):
    """Without offset, start_date (whole seconds) cannot get past a page of records in one second:
    the stream fails and says what to raise, rather than ship the first page and stall."""
    records = make_records([0, 1, 2, 3, 4] + [10] * 12 + [20, 21, 22], now_us() - 3600 * 1_000_000)
    api = FakeService(order, True, "limit")
    api.records = records
    store, sink = MemoryStore(), MemorySink()
    report = run_with(api, 10, store, sink, _limits())
    assert not report.ok and "raise FORWARDER_PAGE_LIMIT" in report.error
    assert set(sink.delivered) <= {event_id(r) for r in records[:5]}  # only what is older than the crowd
    assert report.watermark is None or parse_iso(report.watermark) < parse_iso(records[5]["created_at"])


def test_a_whole_trail_as_long_as_a_page_from_a_service_that_ignores_paging_is_read_once():
    """Every answer is the whole trail, which is exactly a page long: the page at the next offset
    is the same, and so is the one from the last created_at read. One unpaged request shows the
    trail was whole (a service honouring limit would answer more): nothing fails, calls counted."""
    records = make_records([0, 5, 10], now_us() - 3600 * 1_000_000)
    api = FakeService("asc", True, False)
    api.records = records
    report = run_with(api, 3, MemoryStore(), MemorySink(), _limits())
    assert report.ok, report.error
    assert report.api_calls == api.calls <= 4


@pytest.mark.parametrize(
    "service", [("desc", True, True), ("random", True, True), ("random", True, False), ("asc", True, True)]
)
def test_a_record_dated_9999_is_shipped_once_and_counted_whatever_the_strategy(service):
    """A service honouring end_date answers no record past the newest window's end: that window is
    asked open-ended, so the time-windows strategy ships records dated in the future once, as the
    others do, and counts them (the watermark stays at the clock). The first pass ends at the first
    of them (the cap): the next pass starts past the clock, and still asks."""
    records = make_records(list(range(0, 300, 10)), now_us() - 3600 * 1_000_000)
    soon, late = make_records([3600, 0], now_us())
    late.update(changes={"n": "9999"}, created_at=FAR_FUTURE)
    api = FakeService(*service)
    api.records = [*records, soon, late]
    store, sink = MemoryStore(), MemorySink()
    first = run_with(api, 10, store, sink, _limits(cap=31))
    assert first.ok, first.error
    assert first.strategy == ("ascending+start_date" if service[0] == "asc" else "time-windows")
    assert first.future == 2 and first.new == 32 and first.passes == 2
    assert parse_iso(first.watermark) < now_us() + 600 * 1_000_000
    api.records.append(make_records([0], now_us() - 1_000_000)[0])
    second = run_with(api, 10, store, sink, _limits(cap=31))
    assert second.ok and second.future == 0 and second.new == 1
    assert Counter(sink.delivered) == Counter(event_id(r) for r in api.records)
