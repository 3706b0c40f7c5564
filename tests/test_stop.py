"""The stop flag: what a stop cuts at each shield level, and the signals that set it (a second one
is urgent). The signals are sent to this process, with the handlers restored afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
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


# The kernel may deliver a process's SIGTERM to any of its threads, while Python runs the handler
# only on the main thread and only once that thread runs Python code. pthread_kill sends the signal
# to a chosen thread, as the kernel now and then does (a CI run's `--interval` wait ignored SIGTERM).
SIGNAL_TO_A_WORKER = """
import signal, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from forwarder import stop

stop.install()

def signal_this_thread():
    time.sleep(0.2)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

def signal_then_wait_for_the_stop():
    signal_this_thread()
    seen_by = time.monotonic() + 60
    while not stop.requested() and time.monotonic() < seen_by:
        time.sleep(0.01)
    return stop.requested()

if sys.argv[1] == "wait":
    threading.Thread(target=signal_this_thread).start()
    print(stop.wait(600))
else:
    with ThreadPoolExecutor(1) as pool:
        print(stop.settle(pool.submit(signal_then_wait_for_the_stop)))
"""


@pytest.mark.parametrize("blocked_in", ["wait", "settle"])
def test_a_stop_delivered_to_another_thread_reaches_a_blocked_main_thread(blocked_in):
    """An `--interval` wait and a run waiting for its stream workers both end on such a stop."""
    done = subprocess.run(
        [sys.executable, "-c", SIGNAL_TO_A_WORKER, blocked_in], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
