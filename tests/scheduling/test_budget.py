"""When a run stops starting streams, and the reason it keeps."""

from __future__ import annotations

from forwarder import stop
from forwarder.scheduling.budget import Stops


def test_the_call_budget_then_the_time_budget_and_the_first_reason_stays():
    spent, now = [0], [0.0]
    stops = Stops(lambda: False, 3, 8.0, lambda: spent[0], clock=lambda: now[0])
    assert not stops()
    spent[0] = 3
    assert stops() and "3 API calls" in (stops.reason or "")
    now[0] = 9.0
    assert stops() and "FORWARDER_RUN_BUDGET_CALLS" in (stops.reason or "")


def test_the_time_budget_and_no_budget():
    now = [0.0]
    timed = Stops(lambda: False, None, 8.0, lambda: 10**6, clock=lambda: now[0])
    assert not timed()
    now[0] = 8.0
    assert timed() and "FORWARDER_RUN_BUDGET_TIME" in (timed.reason or "")
    assert not Stops(lambda: False, None, None, lambda: 10**6)()


def test_a_deadline_and_a_stop_request_are_told_apart():
    deadline = Stops(lambda: True, None, None, lambda: 0)
    assert deadline() and deadline.reason == "deadline"
    stop.request()
    try:
        requested = Stops(lambda: True, None, None, lambda: 0)
        assert requested() and requested.reason == "stop requested"
    finally:
        stop.reset()
