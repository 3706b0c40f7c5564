"""One stop flag for every runtime (CLI, Lambda, Splunk input).

SIGTERM (docker stop, systemd, Lambda's shutdown, splunkd disabling an input) sets it. From then on
nothing new starts: no stream, no pass, no retry wait and no HTTP request; a request in flight is
cut (``forwarder.http``), and the batch it carried stays uncommitted, to be re-sent by the next run.
Each runtime calls :func:`install` once; everything else only asks :func:`requested` or :func:`check`.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any, Callable

from .errors import ForwarderError

log = logging.getLogger(__name__)
_event = threading.Event()


class Stopped(ForwarderError):
    """Work abandoned because the process was asked to stop; nothing past it was committed."""


def install() -> Callable[[], bool]:
    """Stop on SIGTERM from now on (main thread only: Python's rule) and return :func:`requested`."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_signal)
    return requested


def _on_signal(signum: int, frame: Any) -> None:
    _event.set()
    # Log from another thread: the handler runs on the main thread wherever it was interrupted,
    # possibly inside a log handler or the console's screen lock, which would then deadlock.
    threading.Thread(target=_log_stop, args=(signum,), name="stop-log", daemon=True).start()


def _log_stop(signum: int) -> None:
    log.warning(
        "stop requested: finishing the batch in flight, starting nothing new", extra={"signal": signum}
    )


def request() -> None:
    _event.set()


def requested() -> bool:
    return _event.is_set()


def wait(seconds: float) -> bool:
    """Sleep up to ``seconds``; True (at once) when a stop is requested."""
    return _event.wait(max(0.0, seconds))


def check(what: str) -> None:
    """Raise Stopped instead of starting ``what`` once a stop is requested."""
    if _event.is_set():
        raise Stopped(f"stopping on request: {what} not started")


def reset() -> None:
    """Forget a stop request (tests; a runtime that keeps its process after a handled stop)."""
    _event.clear()
