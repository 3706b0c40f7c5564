"""The selector: the oldest new records up to the cap, the feedback each page gives its source, and
where the next pass resumes."""

from __future__ import annotations

from typing import Optional

from forwarder.reading.pages import Page
from forwarder.reading.select import Limits, Selector
from forwarder.records import parse_record
from forwarder.state.model import StreamState
from forwarder.streams import Stream
from forwarder.timeutil import now_us
from tests.pipeline.test_delivery_property import make_records

STREAM = Stream("user", "alice@example.com")
BASE = now_us() - 3600 * 1_000_000


def selector(cap: int, state: Optional[StreamState] = None, keeps=lambda stream, record: True) -> Selector:
    limits = Limits(initial_lookback_s=86400, window_s=600, max_records_per_pass=cap)
    return Selector(STREAM, state or StreamState(), floor_us=BASE - 1, limits=limits, keeps=keeps)


def test_the_oldest_new_records_up_to_the_cap_oldest_first():
    records = make_records([5, 1, 4, 2, 3], BASE)
    chosen = selector(3)
    chosen.take(Page(records))
    result = chosen.result()
    assert [r.ts_us for r in result.records] == [BASE + s * 1_000_000 for s in (1, 2, 3)]
    assert not result.complete and result.fetched == 5


def test_enough_only_where_the_rest_is_known_newer():
    records = make_records(list(range(30)), BASE)
    unordered = selector(5)
    assert not unordered.take(Page(records[:10])).enough  # no order asked: the rest may be older
    ordered = selector(5)
    claimed = Page(records[:10], sorted_request=True, order_shown=True)
    assert ordered.take(claimed).enough
    window = selector(5)
    assert window.take(Page(records[:10], boundary=True)).enough


def test_feedback_tells_what_the_page_added_and_the_order():
    records = make_records([1, 2, 3], BASE)
    chosen = selector(10)
    first = chosen.take(Page(records))
    assert (first.added, first.ascending, first.last_us, first.oldest_us) == (
        3,
        True,
        BASE + 3_000_000,
        BASE + 1_000_000,
    )
    again = chosen.take(Page(list(reversed(records))))
    assert again.added == 0 and not again.ascending and again.misplaced


def test_unplaceable_records_are_set_aside_and_the_rest_read():
    records = make_records([1, 2], BASE)
    chosen = selector(10)
    chosen.take(Page([records[0], {"created_at": "never"}, "text", records[1]]))
    result = chosen.result()
    assert len(result.records) == 2
    assert [why.split(":")[0] for _, why in result.unplaceable] == ["page 1, record 2", "page 1, record 3"]
    assert [raw for raw, _ in result.unplaceable] == [{"created_at": "never"}, "text"]


def test_delivered_and_other_streams_records_are_skipped_and_late_ones_counted():
    records = make_records([1, 2, 3, 10], BASE)
    delivered = parse_record(records[1])
    state = StreamState(watermark_us=BASE + 5_000_000, seen={delivered.event_id: delivered.ts_us})
    others = {parse_record(records[2]).event_id}
    chosen = selector(10, state, keeps=lambda stream, record: record.event_id not in others)
    chosen.take(Page(records))
    result = chosen.result()
    assert [r.ts_us for r in result.records] == [BASE + 1_000_000, BASE + 10_000_000]
    assert result.skipped == 2 and result.late == 1  # the record of second 1 is older than the watermark
