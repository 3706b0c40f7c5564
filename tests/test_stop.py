"""The stop flag: what a stop cuts at each shield level, and the signals that set it (a second one
is urgent). The signals are sent to this process, with the handlers restored afterwards."""

from __future__ import annotations

import os
import signal
import threading
from typing import Iterator

import pytest

from forwarder import stop


@pytest.fixture(autouse=True)
def fresh_flag() -> Iterator[None]:
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    stop.reset()
    yield
    stop.reset()
    for number, handler in handlers.items():
        signal.signal(number, handler)


def shielded_check(shield: int) -> bool:
    """Whether work at ``shield`` would be refused now."""
    with stop.shielded(shield):
        try:
            stop.check("work")
        except stop.Stopped:
            return True
    return False


def test_a_stop_cuts_ordinary_work_an_urgent_one_finishing_work_and_none_the_release():
    assert not any(shielded_check(s) for s in (stop.ORDINARY, stop.FINISHING, stop.RELEASING))
    stop.request()
    assert [shielded_check(s) for s in (stop.ORDINARY, stop.FINISHING, stop.RELEASING)] == [
        True,
        False,
        False,
    ]
    stop._urgent.set()  # what a second signal sets
    assert [shielded_check(s) for s in (stop.ORDINARY, stop.FINISHING, stop.RELEASING)] == [True, True, False]
    assert stop.level() == stop.ORDINARY  # the shield ends with its block


def test_a_shield_is_the_threads_own_and_its_waits_are_not_ended_by_a_plain_stop():
    stop.request()
    seen = {}

    def other() -> None:
        seen["cut"] = stop.cuts(stop.level())

    with stop.shielded(stop.FINISHING):
        assert not stop.wait(0.0)  # a retry wait of a state write is not ended by the stop
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert seen == {"cut": True}  # another thread's work is not shielded
    assert stop.wait(0.0)


def test_sigterm_then_sigint_request_a_stop_then_an_urgent_one():
    stop.install()
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop.requested() and not stop.cuts(stop.FINISHING)
    os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt: the second stop is urgent
    assert stop.cuts(stop.FINISHING) and not stop.cuts(stop.RELEASING)
