"""One stop flag for every runtime (CLI, Lambda, Splunk input).

SIGTERM (docker stop, systemd, Lambda's shutdown, splunkd disabling an input) and SIGINT (Ctrl-C)
set it. From then on nothing new starts: no stream, no pass, no retry wait and no HTTP request; a
request in flight is cut (``forwarder.http``), and the batch it carried stays uncommitted, to be
re-sent by the next run. Each runtime calls :func:`install` once; everything else only asks
:func:`requested` or :func:`check`.

What a stop must not cut is done under :func:`shielded`: the state write of a batch the sink has
accepted (``FINISHING``: else it is sent twice) and the release of the run lease (``RELEASING``:
else every run is refused until it expires). Each stays bounded by its own deadline. A second stop
signal (a second Ctrl-C) is *urgent*: it cuts the finishing writes too (their batches are sent again
next run, same ids), so the process ends at once; only the lease release is still made.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from typing import Any, Callable, Iterator, TypeVar

from .errors import ForwarderError

log = logging.getLogger(__name__)
_event = threading.Event()  # a stop was requested
_urgent = threading.Event()  # requested twice: finishing writes are cut too
_shield = threading.local()  # the shield level of what this thread is doing
_signals: queue.SimpleQueue[tuple[int, bool]] = queue.SimpleQueue()  # for the log, off the handler
_reporter: list[threading.Thread] = []

ORDINARY, FINISHING, RELEASING = 0, 1, 2  # cut by any stop, by an urgent one, by none
_WAKE_S = 0.2  # how long the main thread may go without running signal handlers
T = TypeVar("T")


class Stopped(ForwarderError):
    """Work abandoned because the process was asked to stop; nothing past it was committed."""


def install() -> Callable[[], bool]:
    """Stop on SIGTERM and SIGINT from now on (main thread only: Python's rule) and return
    :func:`requested`."""
    if threading.current_thread() is threading.main_thread():
        if not _reporter:
            _reporter.append(threading.Thread(target=_report_stops, name="stop-log", daemon=True))
            _reporter[0].start()
        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
    return requested


def _on_signal(signum: int, frame: Any) -> None:
    # The handler runs on the main thread wherever it was interrupted, so it takes no lock that
    # thread may hold: no logging, no thread start (SimpleQueue.put is reentrant).
    urgent = _event.is_set()
    (_urgent if urgent else _event).set()
    _signals.put((signum, urgent))


def _report_stops() -> None:
    while True:
        signum, urgent = _signals.get()
        if urgent:
            log.warning(
                "stop requested again: abandoning the batches in flight and their state writes "
                "(sent again next run); releasing the lease",
                extra={"signal": signum},
            )
        else:
            log.warning(
                "stop requested: finishing the batch in flight, starting nothing new "
                "(a second Ctrl-C or SIGTERM ends at once)",
                extra={"signal": signum},
            )


def request() -> None:
    _event.set()


def requested() -> bool:
    return _event.is_set()


def level() -> int:
    """The shield level of this thread's work (ORDINARY unless inside :func:`shielded`)."""
    return int(getattr(_shield, "level", ORDINARY))


def cuts(shield: int) -> bool:
    """Whether a stop requested now ends work done at ``shield`` level."""
    if shield >= RELEASING:
        return False
    return (_urgent if shield == FINISHING else _event).is_set()


@contextlib.contextmanager
def shielded(shield: int) -> Iterator[None]:
    """Run the block at ``shield`` level (FINISHING or RELEASING) in this thread."""
    previous = level()
    _shield.level = max(previous, shield)
    try:
        yield
    finally:
        _shield.level = previous


def wait(seconds: float) -> bool:
    """Sleep up to ``seconds``; True (at once) when a stop that cuts this thread's work is requested."""
    shield = level()
    if shield >= RELEASING:
        time.sleep(max(0.0, seconds))
        return False
    flag = _urgent if shield == FINISHING else _event
    if threading.current_thread() is not threading.main_thread():
        return flag.wait(max(0.0, seconds))
    end = time.monotonic() + max(0.0, seconds)
    while not flag.is_set():  # short sleeps: see settle()
        left = end - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(left, _WAKE_S))
    return True


def settle(future: Future[T]) -> T:
    """``future.result()`` for the main thread, which wakes every fraction of a second meanwhile.

    Python runs a signal handler on the main thread only, once that thread runs Python code; the
    kernel may deliver SIGTERM to any thread, and a main thread blocked in a lock until the work is
    done would hear of it only then (a Ctrl-C ignored for the whole run, an `--interval` wait for
    the whole interval)."""
    while not wait_futures([future], timeout=_WAKE_S).done:
        pass
    return future.result()


def check(what: str) -> None:
    """Raise Stopped instead of starting ``what`` once a stop that cuts this thread's work is requested."""
    if cuts(level()):
        raise Stopped(f"stopping on request: {what} not started")


def reset() -> None:
    """Forget a stop request (tests; a runtime that keeps its process after a handled stop)."""
    _event.clear()
    _urgent.clear()
