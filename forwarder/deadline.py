"""Total deadlines for HTTP calls: ``request`` is ``session.request`` that gives up at a deadline.

A socket timeout bounds each read, not a response: a server that sends a byte every few seconds,
in its headers or its body, or a proxy or server that trickles its side of a handshake, would hold a
call forever. Here one watchdog thread watches every call in progress; at a call's deadline, or when
a stop is requested (``forwarder.stop``), it shuts the call's socket down, which ends the blocked read
at once, and the call raises DeadlineExceeded (or stop.Stopped) naming the step it was cut at.

The connections of the sessions ``forwarder.http`` builds hand the socket they wait on, at every
step, to the call in progress (``forwarder.transport.watched``). :func:`watching` is that watchdog
for any client whose connections are watched (``aws.call``).
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from typing import Any, Dict, Iterator, Optional, Tuple

import requests

from . import stop
from .urls import redact_url

_calls = threading.local()  # the _Call in progress on this thread, if any


class DeadlineExceeded(requests.exceptions.Timeout):
    """The whole response took longer than its total deadline (a server trickling it)."""


class _Call:
    """One call's socket, what the call waits for on it, and whether the watchdog cut it."""

    def __init__(self) -> None:
        self.shield = stop.level()  # which stop requests cut this call (forwarder.stop.shielded)
        self.sock: Optional[socket.socket] = None
        self.step: Optional[str] = None  # what the call waits for on ``sock`` (None: the answer)
        self.cut = threading.Event()
        self._duplicate = False  # ``sock`` is a duplicate descriptor, for the call to close
        # The watchdog's cut and the caller's attach race: under one lock, a socket attached after
        # the cut is shut at once and a cut never misses a socket being attached.
        self._lock = threading.Lock()

    def attach(self, sock: Optional[socket.socket], step: Optional[str] = None) -> None:
        """Wait on ``sock`` for ``step`` from now on (the cut shuts it down)."""
        self._hold(sock, step, duplicate=False)

    def attach_descriptor(self, sock: socket.socket, step: Optional[str]) -> None:
        """Wait for ``step`` on a duplicate of ``sock``'s descriptor, which still reaches the connection
        once a TLS handshake has taken the descriptor over from the ``sock`` object."""
        self._hold(socket.fromfd(sock.fileno(), sock.family, sock.type), step, duplicate=True)

    def release(self) -> None:
        """Forget the socket (the step stays, for the message of a cut)."""
        self._hold(None, self.step, duplicate=False)

    def _hold(self, sock: Optional[socket.socket], step: Optional[str], duplicate: bool) -> None:
        with self._lock:
            if self._duplicate and self.sock is not None:
                self.sock.close()  # only the duplicate: the connection stays open
            self.sock, self.step, self._duplicate = sock, step, duplicate
            if self.cut.is_set():
                self._shutdown()

    def cut_now(self) -> None:
        with self._lock:
            self.cut.set()
            self._shutdown()

    def _shutdown(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)


def request(
    session: requests.Session,
    method: str,
    url: str,
    *,
    timeout: Tuple[float, float],
    deadline_s: float,
    **kwargs: Any,
) -> requests.Response:
    """``session.request`` with the answer, headers and body, read whole within ``deadline_s``.
    ``session`` is one ``forwarder.http.new_session`` built: its connections are watched. A read
    timeout is only a backstop past the deadline: a silent peer is always cut by the watchdog, so it
    fails in the same words every time (naming the step), never by whichever timer fired first."""
    what = f"{method} {redact_url(url)}"
    timeout = (timeout[0], max(timeout[1], deadline_s + 1.0))
    with watching(what, deadline_s) as call:
        try:
            response = session.request(method, url, timeout=timeout, stream=True, **kwargs)
            response.content  # noqa: B018 - reads the body under the watchdog
        except (requests.RequestException, OSError):
            if not call.cut.is_set():
                raise
    if call.cut.is_set():
        raise DeadlineExceeded(cut_message(call, what, deadline_s))
    return response


def cut_message(call: _Call, what: str, deadline_s: float) -> str:
    """The message of a call ``what`` the watchdog cut at its deadline, naming the step it was cut at;
    stop.Stopped instead when a stop request cut it."""
    stop.check(f"the rest of {what} (cut during {call.step})" if call.step else f"the rest of {what}")
    during = f", cut during {call.step}" if call.step else ""
    return f"{what}: no complete response within {deadline_s:g} s (HTTP timeout){during}"


@contextlib.contextmanager
def watching(what: str, deadline_s: float) -> Iterator[_Call]:
    """Run the block as this thread's call in progress: at ``deadline_s`` or on a stop request that
    cuts this thread's work (``stop.cuts``) its socket is shut and ``cut`` set (Stopped instead of
    starting once such a stop is requested)."""
    stop.check(what)
    call = _Call()
    _calls.call = call
    _watchdog.add(call, time.monotonic() + deadline_s)
    try:
        yield call
    finally:
        _calls.call = None
        _watchdog.remove(call)  # from here on the call is never cut
        call.release()


class _Watchdog:
    """One thread watching every call in progress. A thread started and joined per call cost two
    thread hand-offs per request, more than a loopback request itself on a busy machine."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadlines: Dict[_Call, float] = {}  # monotonic time each call is cut at
        self._wakes_at = math.inf  # when the thread looks next (inf: idle until woken)
        self._thread: Optional[threading.Thread] = None

    def add(self, call: _Call, at: float) -> None:
        with self._cond:
            self._deadlines[call] = at
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="http-deadline", daemon=True)
                self._thread.start()
            if at < self._wakes_at:  # else waking the thread would only cost a thread switch
                self._cond.notify()

    def remove(self, call: _Call) -> None:
        with self._cond:
            self._deadlines.pop(call, None)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for call, at in list(self._deadlines.items()):
                    if stop.cuts(call.shield) or at <= now:
                        # Cut under the lock: a call removed (its block over) can no longer be cut.
                        del self._deadlines[call]
                        call.cut_now()
                # While calls are in flight, a stop request is noticed within a quarter second.
                wait = min(min(self._deadlines.values()) - now, 0.25) if self._deadlines else None
                self._wakes_at = math.inf if wait is None else now + wait
                self._cond.wait(wait)


_watchdog = _Watchdog()


def _after_fork() -> None:
    global _watchdog
    _watchdog = _Watchdog()  # the parent's thread does not exist in a forked child, nor its lock state


os.register_at_fork(after_in_child=_after_fork)


def current() -> Optional[_Call]:
    """This thread's call in progress, if any."""
    return getattr(_calls, "call", None)
