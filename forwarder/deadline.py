"""Total deadlines for HTTP calls: ``request`` is ``session.request`` that gives up at a deadline.

A socket timeout bounds each read, not a response: a server that sends a byte every few seconds,
in its headers or its body, would hold a call forever. Here a watchdog thread waits beside every
call; at the deadline, or when a stop is requested (``forwarder.stop``), it shuts the call's socket
down, which ends the blocked read at once, and the call raises DeadlineExceeded (or stop.Stopped).

To reach the socket before any byte of the answer arrives, the session's connection pools use
connections that hand their socket to the watchdog of the call in progress (``Watched``).
:func:`watching` is that watchdog for any client whose connections are ``Watched`` (``aws.call``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any, Iterator, Optional, Tuple

import requests
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from . import stop
from .urls import redact_url

_calls = threading.local()  # the _Call in progress on this thread, if any


class DeadlineExceeded(requests.exceptions.Timeout):
    """The whole response took longer than its total deadline (a server trickling it)."""


class _Call:
    """One call's socket and whether the watchdog cut it."""

    def __init__(self) -> None:
        self.sock: Optional[socket.socket] = None
        self.cut = threading.Event()
        self.done = threading.Event()
        # The watchdog's cut and the caller's attach race: under one lock, a socket attached after
        # the cut is shut at once and a cut never misses a socket being attached.
        self._lock = threading.Lock()

    def attach(self, sock: Optional[socket.socket]) -> None:
        with self._lock:
            self.sock = sock
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


class Watched:
    """A connection that hands its socket to the call in progress before waiting for the answer."""

    sock: Optional[socket.socket]

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        call = current()
        if call is not None:
            call.attach(self.sock)
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _Connection(Watched, HTTPConnection):
    pass


class _TlsConnection(Watched, HTTPSConnection):
    pass


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


def watch(session: requests.Session) -> None:
    """Make ``session``'s direct connections reachable by the watchdog (proxied ones keep only the
    per-read timeout before the answer starts, and the deadline once it has)."""
    for adapter in session.adapters.values():
        manager = getattr(adapter, "poolmanager", None)
        if manager is not None and manager.pool_classes_by_scheme.get("http") is not _Pool:
            manager.clear()
            manager.pool_classes_by_scheme = {"http": _Pool, "https": _TlsPool}


def request(
    session: requests.Session,
    method: str,
    url: str,
    *,
    timeout: Tuple[float, float],
    deadline_s: float,
    **kwargs: Any,
) -> requests.Response:
    """``session.request`` with the answer, headers and body, read whole within ``deadline_s``."""
    what = f"{method} {redact_url(url)}"
    watch(session)
    with watching(what, deadline_s) as call:
        try:
            response = session.request(method, url, timeout=timeout, stream=True, **kwargs)
            call.attach(_socket_of(response) or call.sock)
            response.content  # noqa: B018 - reads the body under the watchdog
        except (requests.RequestException, OSError):
            if not call.cut.is_set():
                raise
    if call.cut.is_set():
        stop.check(f"the rest of {what}")
        raise DeadlineExceeded(f"{what}: no complete response within {deadline_s:g} s (HTTP timeout)")
    return response


@contextlib.contextmanager
def watching(what: str, deadline_s: float) -> Iterator[_Call]:
    """Run the block as this thread's call in progress: at ``deadline_s`` or on a stop request its
    socket is shut and ``cut`` set (Stopped instead of starting once a stop is requested)."""
    stop.check(what)
    call = _Call()
    started = time.monotonic()

    def watchdog() -> None:
        while not call.done.is_set() and not stop.requested():
            remaining = deadline_s - (time.monotonic() - started)
            if remaining <= 0:
                break
            call.done.wait(min(remaining, 0.25))  # a stop request is noticed within a quarter second
        if not call.done.is_set():
            call.cut_now()

    guard = threading.Thread(target=watchdog, name="http-deadline", daemon=True)
    _calls.call = call
    guard.start()
    try:
        yield call
    finally:
        _calls.call = None
        call.done.set()
        guard.join()


def current() -> Optional[_Call]:
    """This thread's call in progress, if any."""
    return getattr(_calls, "call", None)


def _socket_of(response: requests.Response) -> Optional[socket.socket]:
    """The socket a streamed response reads from (for sessions whose pools are not watched)."""
    sock: Optional[socket.socket] = getattr(getattr(response.raw, "_connection", None), "sock", None)
    if sock is None:
        fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
        sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock
