"""Connections the deadline watchdog (``forwarder.deadline``) can cut at every step, not only while the
answer is awaited: the connection to a proxy, a SOCKS negotiation, a CONNECT, each TLS handshake.

A ``Watched`` connection hands the socket it waits on to the call in progress at each step, and says
what it waits there for (the message of a cut names that step and its host). Until the connection is
up, what it hands over is a duplicate of the TCP socket's descriptor: a TLS handshake runs on an
``SSLSocket`` that took the descriptor over from the socket object urllib3 made (shutting that object
down does nothing), and every layer set up on the connection (TLS with an HTTPS proxy, a CONNECT
tunnel, TLS inside it) ends when the TCP socket under it is shut down.

Sessions mount :class:`WatchedAdapter`: its direct pools and proxy pools (plain forwarding, CONNECT
tunnels, SOCKS) all open ``Watched`` connections; ``aws_deadline`` makes botocore's pools the same way.
Every private hook this overrides or sets is checked at import (``HOOKS``; PySocks' on first use).
"""

from __future__ import annotations

import functools
import socket
import threading
from typing import Any, Dict, Optional, Tuple

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import PoolManager
from urllib3.response import HTTPResponse
from urllib3.util.ssltransport import SSLTransport

from ..deadline import current
from .hooks import Hook, require


def _urllib3_hooks(made: HTTPSConnection) -> Tuple[Hook, ...]:
    """What the classes below override, call or set in urllib3, and the attributes they read of a
    connection (``made``, never connected: the attributes its constructor sets)."""
    return (
        Hook(HTTPConnection, "_new_conn", ("self",)),
        Hook(HTTPConnection, "_tunnel", ("self",)),
        Hook(HTTPConnection, "connect", ("self",)),
        Hook(HTTPConnection, "getresponse"),
        Hook(made, "_tunnel_host"),
        Hook(made, "_tunnel_port"),
        Hook(made, "proxy"),
        Hook(made, "sock"),
        Hook(HTTPConnectionPool, "_put_conn", ("self", "conn")),
        Hook(HTTPConnectionPool, "ConnectionCls"),
        Hook(HTTPSConnectionPool, "ConnectionCls"),
        Hook(PoolManager(), "pool_classes_by_scheme"),
        Hook(HTTPResponse(body=b""), "enforce_content_length"),
    )


def _requests_hooks(made: HTTPAdapter) -> Tuple[Hook, ...]:
    """What ``WatchedAdapter`` overrides or sets of requests' adapter (``made``: one new adapter)."""
    return (
        Hook(HTTPAdapter, "init_poolmanager"),
        Hook(HTTPAdapter, "proxy_manager_for", ("self", "proxy")),
        Hook(HTTPAdapter, "build_response", ("self", "req", "resp")),
        Hook(made, "poolmanager"),
        Hook(made, "proxy_manager"),
    )


require(_urllib3_hooks(HTTPSConnection("localhost", 443)), "urllib3", urllib3.__version__)
require(_requests_hooks(HTTPAdapter()), "requests", requests.__version__)


class Watched:
    """A connection whose every step the watchdog of the call in progress can cut (see the module)."""

    sock: Any  # socket, SSLSocket, or SSLTransport (TLS inside TLS with an HTTPS proxy)
    host: str  # the proxy's for a connection through an HTTP(S) proxy (not for a SOCKS one)
    port: int
    proxy: Any  # the HTTP(S) proxy's Url, None without one
    _tunnel_host: Optional[str]
    _tunnel_port: Optional[int]

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        call = current()
        if call is not None:
            try:
                call.attach_descriptor(sock, self._first_handshake())
            except OSError:  # no descriptor left to duplicate: the socket is not left to the collector
                sock.close()
                raise
        return sock

    def _first_handshake(self) -> Optional[str]:
        """What the new TCP connection waits for first (a CONNECT names its own step)."""
        if not isinstance(self, HTTPSConnection):
            return None
        if self.proxy is not None and self.proxy.scheme == "https":
            return f"the TLS handshake with the proxy {_address(self.host, self.port)}"
        return None if self._tunnel_host else f"the TLS handshake with {_address(self.host, self.port)}"

    def _tunnel(self) -> None:
        origin = _address(self._tunnel_host or "", self._tunnel_port)
        through = f"through the proxy {_address(self.host, self.port)}"
        _at(f"the CONNECT to {origin} {through}")
        super()._tunnel()  # type: ignore[misc]
        if isinstance(self, HTTPSConnection):
            _at(f"the TLS handshake with {origin} {through}")

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self._hand_over()  # set up: from here on the call waits for the answer on its own socket

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        self._hand_over()  # again: a pooled connection, opened by an earlier call
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]

    def _hand_over(self) -> None:
        call = current()
        if call is not None:
            # TLS inside TLS reads through the TLS connection to the proxy, which can be shut down.
            call.attach(self.sock.socket if isinstance(self.sock, SSLTransport) else self.sock)


def _at(step: str) -> None:
    """Tell the call in progress, if any, what its connection now waits for."""
    call = current()
    if call is not None:
        call.step = step


def _address(host: str, port: Optional[int]) -> str:
    host = f"[{host}]" if ":" in host else host
    return host if port is None else f"{host}:{port}"


class ForgetsReturned:
    """A pool of ``Watched`` connections: one handed back is forgotten by the call in progress first."""

    def _put_conn(self, conn: Any) -> None:
        # Back in the pool, the connection is soon another call's (a session is shared by threads):
        # a cut of this call from now on, its answer read, must not shut that call's socket down.
        call = current()
        if call is not None and conn is not None:
            call.release()
        super()._put_conn(conn)  # type: ignore[misc]


def watched_pools(plain: type, tls: type) -> Dict[str, type]:
    """Connection pool classes by scheme: ``plain`` and ``tls`` opening ``Watched`` connections."""

    def watched(pool: type) -> type:
        opens = pool.ConnectionCls  # type: ignore[attr-defined]
        connection = type(f"Watched{opens.__name__}", (Watched, opens), {})
        return type(f"Watched{pool.__name__}", (ForgetsReturned, pool), {"ConnectionCls": connection})

    return {"http": watched(plain), "https": watched(tls)}


_WATCHED_POOLS = watched_pools(HTTPConnectionPool, HTTPSConnectionPool)


_SOCKS_LOCK = threading.Lock()


def _socks_pools() -> Dict[str, type]:
    """Made on first use: urllib3's SOCKS pools need PySocks, as requests does for a SOCKS proxy."""
    with _SOCKS_LOCK:  # two threads meeting their first SOCKS proxy at once wrap connect once
        return _made_socks_pools()


@functools.cache
def _made_socks_pools() -> Dict[str, type]:
    import socks
    from urllib3.contrib.socks import SOCKSHTTPConnectionPool, SOCKSHTTPSConnectionPool

    with socks.socksocket() as made:  # never connected: the attributes its constructor sets
        hooks = (
            Hook(socks.socksocket, "connect"),  # wrapped: its arguments passed on as they came
            Hook(made, "proxy"),
            Hook(socks, "DEFAULT_PORTS"),
            Hook(SOCKSHTTPConnectionPool, "ConnectionCls"),
            Hook(SOCKSHTTPSConnectionPool, "ConnectionCls"),
        )
        require(hooks, "PySocks", getattr(socks, "__version__", "(unknown version)"))
    connect = socks.socksocket.connect

    @functools.wraps(connect)
    def watched_connect(sock: Any, *args: Any, **kwargs: Any) -> Any:
        call = current()
        kind, host, port = sock.proxy[:3]  # the rest are the proxy's credentials
        if call is not None and kind is not None:  # a socket without a proxy connects directly
            where = _address(host, port or socks.DEFAULT_PORTS.get(kind))
            call.attach(sock, f"the SOCKS negotiation with the proxy {where}")
        return connect(sock, *args, **kwargs)

    # PySocks makes a socket, connects it to the proxy and negotiates in one call (create_connection,
    # which urllib3 uses) with no hook between, and its methods name their class through the module:
    # its socket's connect is wrapped, once, to hand the socket to the call in progress first.
    socks.socksocket.connect = watched_connect
    return watched_pools(SOCKSHTTPConnectionPool, SOCKSHTTPSConnectionPool)


class WatchedAdapter(HTTPAdapter):
    """requests' adapter whose every pool, direct or through a proxy (HTTP, HTTPS, SOCKS), opens
    ``Watched`` connections: mounted on a session, no call it makes waits past its deadline or a stop."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def build_response(self, req: Any, resp: Any) -> Any:
        # urllib3 1.26 (the Splunk add-on's, and botocore's pin on Python 3.9) takes a body cut before
        # its Content-Length for the whole body; 2.x refuses it. Refused on both, it is a transport
        # error the retries see, never a truncated page read as JSON.
        resp.enforce_content_length = True
        return super().build_response(req, resp)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        new = proxy not in self.proxy_manager
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if new:  # swapped before the manager opens a pool
            socks = proxy.lower().startswith("socks")
            manager.pool_classes_by_scheme = _socks_pools() if socks else _WATCHED_POOLS
        return manager
