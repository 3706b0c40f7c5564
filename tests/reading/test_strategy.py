"""The strategy follows from what the service was seen to honour, and a pass teaches it."""

from __future__ import annotations

import pytest

from forwarder.reading.pages import Tally
from forwarder.reading.strategy import ASCENDING, FULL_SCAN, OFFSET, WINDOWS, Honoured, learn, strategy


@pytest.mark.parametrize(
    ("honoured", "bounded", "sends_start", "way"),
    [
        (Honoured(), True, True, ASCENDING),
        (Honoured(), False, True, OFFSET),
        (Honoured(start_date=False), True, True, OFFSET),
        (Honoured(), True, False, OFFSET),
        (Honoured(order=False), True, True, WINDOWS),
        (Honoured(order=False, time_bounds=False), True, True, FULL_SCAN),
        (Honoured(order=False), False, True, FULL_SCAN),
    ],
)
def test_strategy_from_what_is_honoured(honoured, bounded, sends_start, way):
    assert strategy(honoured, bounded, sends_start) == way


def test_a_pass_teaches_order_start_date_and_paging():
    h = Honoured()
    learn(h, Tally(pages=2, sorted_request=True, order_shown=True, oldest_us=10_000_000), 10_000_000, True)
    assert (h.order, h.start_date, h.paging) == (True, True, True)
    h = Honoured()
    unordered = Tally(pages=1, sorted_request=True, ascending=False, oldest_us=0, reason="page longer than")
    learn(h, unordered, 10_000_000, True)
    assert (h.order, h.start_date, h.time_bounds, h.paging) == (False, False, False, False)
    h = Honoured()
    learn(h, Tally(pages=1), 10_000_000, False)  # start_date refused by the service
    assert (h.start_date, h.time_bounds) == (False, False)
