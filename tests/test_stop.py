"""The stop flag: what a stop cuts at each shield level, and the signals that set it (a second one
is urgent). The signals are sent to this process, with the handlers restored afterwards."""

from __future__ import annotations

import os
import signal
import threading
from typing import Iterator

import pytest

from forwarder import stop
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import AUDITS_PATH, Simulator
from tests.api.test_hostile_transport import audits, client_for


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


def test_the_watchdog_leaves_a_shielded_call_in_flight_to_its_deadline_and_cuts_it_when_urgent():
    with Simulator(generate_org(2)) as sim:
        sim.trickle_seconds = 0.3
        sim.break_next(1, "trickle")
        client = client_for(sim, timeout=900)
        outcome = {}

        def pull() -> None:
            with stop.shielded(stop.FINISHING):
                try:
                    audits(client)
                except stop.Stopped as exc:
                    outcome["stopped"] = exc

        worker = threading.Thread(target=pull, daemon=True)
        worker.start()
        while not any(r.path == AUDITS_PATH for r in sim.requests):
            worker.join(0.05)
        stop.request()
        worker.join(1.0)  # four looks of the watchdog at the stop (one every quarter second)
        assert worker.is_alive() and "stopped" not in outcome
        stop._urgent.set()
        worker.join(60)
        assert not worker.is_alive() and "stopped" in outcome
