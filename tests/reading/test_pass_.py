"""read_pass: one pass from a source, feedback by return values, where the next pass starts."""

from __future__ import annotations

from typing import Any, List

import pytest

from forwarder.errors import StreamFailed
from forwarder.reading.pages import Page, ReadEnd
from forwarder.reading.pass_ import Position, read_pass, start_position
from forwarder.reading.select import Limits
from forwarder.state.model import StreamState
from forwarder.streams import Stream
from forwarder.timeutil import now_us
from tests.pipeline.test_delivery_property import make_records

STREAM = Stream("user", "alice@example.com")
BASE = now_us() - 3600 * 1_000_000
LIMITS = Limits(initial_lookback_s=86400, window_s=3600, max_records_per_pass=3, tie_margin_s=5)


class Source:
    """Yields ``pages`` (oldest-first claimed), records the feedback, returns ``end``; the first
    ``again`` reads end asking to be read again."""

    def __init__(self, pages: List[List[Any]], end: ReadEnd, again: int = 0) -> None:
        self.pages_, self.end, self.again = pages, end, again
        self.asked: List[Any] = []
        self.heard: List[Any] = []

    def pages(self, stream, start_us, start_offset):
        self.asked.append((start_us, start_offset))
        for n, items in enumerate(self.pages_):
            feedback = yield Page(items, offset=n * 10, sorted_request=True, order_shown=True)
            self.heard.append(feedback)
            if feedback.enough:
                break
        if self.again:
            self.again -= 1
            return ReadEnd(calls=len(self.heard), read_again=True)
        return self.end


def read(source, state=None, at=None, **kw):
    state = state or StreamState()
    return read_pass(source, STREAM, state, LIMITS, floor_us=BASE - 1, keeps=lambda s, r: True, at=at, **kw)


def test_a_whole_pass_is_complete():
    records = make_records([1, 2], BASE)
    done = read(Source([records], ReadEnd(calls=1, reason="short page", strategy="offset")))
    assert done.complete and done.next is None and len(done.records) == 2
    assert (done.calls, done.fetched, done.strategy, done.reason) == (1, 2, "offset", "short page")


def test_the_cap_stops_the_source_and_the_next_pass_resumes_at_the_newest_held():
    records = make_records(list(range(10)), BASE)
    source = Source([records[:5], records[5:]], ReadEnd(calls=1))
    held = read(source)
    assert [f.enough for f in source.heard] == [True]  # the second page was never asked for
    assert not held.complete and held.next == Position(held.records[-1].ts_us, 0)


def test_a_read_again_is_read_from_the_same_place_and_every_call_counted():
    records = make_records([1, 2], BASE)
    source = Source([records], ReadEnd(calls=1), again=1)
    done = read(source, at=Position(BASE, 7))
    assert source.asked == [(BASE, 7), (BASE, 7)]
    assert done.calls == 2 and done.fetched == 2  # the records of the last attempt only


def test_a_truncated_unordered_read_fails_rather_than_ship():
    records = make_records([3, 1], BASE)
    with pytest.raises(StreamFailed, match="page cap"):
        read(Source([records], ReadEnd(calls=1, truncated=True, reason="page cap of 1 reached")))


def test_a_source_that_stopped_early_goes_on_where_it_said():
    records = make_records([1], BASE)
    done = read(Source([records], ReadEnd(calls=1, more=True, resume_us=BASE + 9, next_offset=4)))
    assert not done.complete and done.next == Position(BASE + 9, 4)


def test_a_plain_source_of_lists_is_read_and_stopped_at_enough():
    records = make_records(list(range(10)), BASE)

    class Plain:
        def pages(self, stream, start_us, start_offset):
            for n in range(0, 10, 5):
                yield records[n : n + 5]

    done = read(Plain())
    assert len(done.records) == 3 and done.fetched == 10 and not done.complete


def test_where_a_run_starts():
    assert start_position(StreamState(), 42, LIMITS) == Position(42)  # a first run: the floor
    later = StreamState(watermark_us=BASE, seen={"a": BASE})
    assert start_position(later, 42, LIMITS) == Position(BASE - 5_000_000)  # a poll: the tie margin
    assert start_position(later, 42, LIMITS, reach_back_s=86400) == Position(BASE - 86400 * 1_000_000)
    # A watermark held at the clock (a record dated ahead was delivered): the whole look-back.
    held = StreamState(watermark_us=BASE, seen={"a": BASE - 60_000_000, "future": BASE * 2})
    assert start_position(held, 42, LIMITS) == Position(BASE - 3600 * 1_000_000)
