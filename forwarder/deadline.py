"""Total deadlines for HTTP calls: ``request`` is ``session.request`` that gives up at a deadline.

A socket timeout bounds each read, not a response: a server that sends a byte every few seconds,
in its headers or its body, would hold a call forever. Here one watchdog thread watches every call
in progress; at a call's deadline, or when a stop is requested (``forwarder.stop``), it shuts the
call's socket down, which ends the blocked read at once, and the call raises DeadlineExceeded (or
stop.Stopped).

To reach the socket before any byte of the answer arrives, every connection a session opens hands
its socket to the watchdog of the call in progress (``Watched``): the sessions ``forwarder.http``
builds mount :class:`WatchedAdapter`, whose direct pools and proxy pools (plain forwarding, CONNECT
tunnels, SOCKS) all make such connections. :func:`watching` is that watchdog for any client whose
connections are ``Watched`` (``aws.call``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import socket
import threading
import time
from typing import Any, Dict, Iterator, Optional, Tuple

import requests
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
    """A connection that hands its socket to the call in progress as soon as it opens one (a proxy's
    CONNECT answer is awaited on it) and again before awaiting the answer (a pooled connection, a
    TLS one). A TLS or SOCKS handshake stays bounded per read only: it runs on a socket not handed over."""

    sock: Optional[socket.socket]

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        call = current()
        if call is not None:
            call.attach(sock)
        return sock

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        call = current()
        if call is not None:
            call.attach(self.sock)
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


def watched_pools(plain: type, tls: type) -> Dict[str, type]:
    """Connection pool classes by scheme: ``plain`` and ``tls`` opening ``Watched`` connections."""

    def watched(pool: type) -> type:
        opens = pool.ConnectionCls  # type: ignore[attr-defined]
        connection = type(f"Watched{opens.__name__}", (Watched, opens), {})
        return type(f"Watched{pool.__name__}", (pool,), {"ConnectionCls": connection})

    return {"http": watched(plain), "https": watched(tls)}


_WATCHED_POOLS = watched_pools(HTTPConnectionPool, HTTPSConnectionPool)


@functools.cache
def _socks_pools() -> Dict[str, type]:
    """Made on first use: urllib3's SOCKS pools need PySocks, as requests does for a SOCKS proxy."""
    from urllib3.contrib.socks import SOCKSHTTPConnectionPool, SOCKSHTTPSConnectionPool

    return watched_pools(SOCKSHTTPConnectionPool, SOCKSHTTPSConnectionPool)


class WatchedAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter whose every pool, direct or through a proxy (HTTP, HTTPS, SOCKS), opens
    ``Watched`` connections: mounted on a session, no call it makes waits past its deadline or a stop."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        new = proxy not in self.proxy_manager
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if new:  # swapped before the manager opens a pool
            socks = proxy.lower().startswith("socks")
            manager.pool_classes_by_scheme = _socks_pools() if socks else _WATCHED_POOLS
        return manager


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
    ``session`` is one ``forwarder.http.new_session`` built: its connections are ``Watched``."""
    what = f"{method} {redact_url(url)}"
    with watching(what, deadline_s) as call:
        try:
            response = session.request(method, url, timeout=timeout, stream=True, **kwargs)
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
    _calls.call = call
    _watchdog.add(call, time.monotonic() + deadline_s)
    try:
        yield call
    finally:
        _calls.call = None
        _watchdog.remove(call)  # from here on the call is never cut


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
                now, stopping = time.monotonic(), stop.requested()
                for call, at in list(self._deadlines.items()):
                    if stopping or at <= now:
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
