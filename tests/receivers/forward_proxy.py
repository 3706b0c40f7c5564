"""A loopback forward proxy that relays every byte as it arrives, and logs what it relays.

It takes absolute-form requests for http:// targets (``GET http://host:port/path``, relayed one per
connection: the answer gets ``Connection: close``) and CONNECT tunnels for https:// ones, like the
corporate proxies HTTP_PROXY / HTTPS_PROXY name, and on the same port SOCKS5 tunnels without
authentication (``socks5://``, ``socks5h://``: the Splunk add-on's proxy setting). Given a TLS
context it is an HTTPS proxy (``https://``: TLS with the proxy, and TLS inside it to an https:// peer).
Nothing is buffered: a peer trickling its answer trickles through the proxy too.
"""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import ssl
import threading
from typing import BinaryIO, List, Optional, Tuple
from urllib.parse import urlsplit

import pytest

from tests.receivers.loopback import LoopbackServer

_DROPPED = ("proxy-connection", "proxy-authorization", "connection", "keep-alive")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of a run that names no proxy."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def behind(monkeypatch: pytest.MonkeyPatch, proxy_url: str) -> None:
    """The environment of a run behind ``proxy_url``, for http:// and https://, with no exception."""
    direct(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", proxy_url)
    monkeypatch.setenv("HTTPS_PROXY", proxy_url)


class ForwardProxy(LoopbackServer):
    name = "forward-proxy"

    def __init__(self, tls: Optional[ssl.SSLContext] = None) -> None:
        self.tls = tls
        self.relayed: List[str] = []  # "METHOD target" per request, in arrival order
        super().__init__(_Handler)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"


class _Handler(socketserver.StreamRequestHandler):
    def setup(self) -> None:
        tls = self.server.owner.tls
        if tls is not None:  # the handshake runs here, in the connection's thread
            self.request = tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def handle(self) -> None:
        if self.rfile.peek(1)[:1] == b"\x05":
            self._socks5()
            return
        head = self.rfile.readline(65536).decode("latin-1")
        method, target, _version = head.split()
        headers = _read_headers(self.rfile)
        self.server.owner.relayed.append(f"{method} {target}")
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            with socket.create_connection((host, int(port)), timeout=30) as upstream:
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self.wfile.flush()
                # The client sends nothing more before this answer: rfile holds no byte of the tunnel.
                _pipe_both_ways(self.connection, upstream)
            return
        url = urlsplit(target)
        body = self.rfile.read(int(dict(headers).get("content-length", "0")))
        path = url.path + (f"?{url.query}" if url.query else "")
        lines = [f"{method} {path or '/'} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in headers if name not in _DROPPED]
        lines.append("Connection: close")
        with socket.create_connection((url.hostname, url.port or 80), timeout=30) as upstream:
            upstream.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body)
            # One request per connection: the client never reuses one the proxy is closing.
            _copy(upstream, self.connection, after_first_line=b"Connection: close\r\n")

    def _socks5(self) -> None:
        """RFC 1928 without authentication, CONNECT only, to an IPv4 address or a host name."""
        _version, methods = self.rfile.read(2)
        self.rfile.read(methods)
        self.wfile.write(b"\x05\x00")  # no authentication
        _version, _command, _reserved, kind = self.rfile.read(4)
        if kind == 1:
            host = socket.inet_ntoa(self.rfile.read(4))
        else:  # 3: a name the proxy resolves (socks5h)
            host = self.rfile.read(self.rfile.read(1)[0]).decode("ascii")
        port = int.from_bytes(self.rfile.read(2), "big")
        self.server.owner.relayed.append(f"SOCKS5 {host}:{port}")
        with socket.create_connection((host, port), timeout=30) as upstream:
            self.wfile.write(b"\x05\x00\x00\x01" + bytes(4) + bytes(2))  # granted
            _pipe_both_ways(self.connection, upstream)


def _read_headers(rfile: BinaryIO) -> List[Tuple[str, str]]:
    headers = []
    for raw in iter(rfile.readline, b"\r\n"):
        if not raw:
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers.append((name.strip().lower(), value.strip()))
    return headers


def _copy(source: socket.socket, sink: socket.socket, after_first_line: bytes = b"") -> None:
    """Bytes from ``source`` to ``sink`` as they come until either side hangs up (then ``sink`` is
    shut), with ``after_first_line`` put after the first line."""
    with contextlib.suppress(OSError):
        while True:
            chunk = source.recv(65536)
            if not chunk:
                break
            if after_first_line and b"\n" in chunk:
                at = chunk.index(b"\n") + 1
                chunk, after_first_line = chunk[:at] + after_first_line + chunk[at:], b""
            sink.sendall(chunk)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_RDWR)


def _pipe_both_ways(client: socket.socket, upstream: socket.socket) -> None:
    """The tunnel: bytes both ways until either side hangs up (then both are)."""
    if isinstance(client, ssl.SSLSocket):
        _pipe_in_turn(client, upstream)
        return
    sender = threading.Thread(target=_copy, args=(client, upstream), name="forward-proxy-tunnel", daemon=True)
    sender.start()
    _copy(upstream, client)
    sender.join()


def _pipe_in_turn(client: ssl.SSLSocket, upstream: socket.socket) -> None:
    """The tunnel in one thread, for a TLS client: an SSLSocket must not be read and written at once."""
    with contextlib.suppress(OSError):
        while True:
            ready = [client] if client.pending() else select.select([client, upstream], [], [])[0]
            for source, sink in ((client, upstream), (upstream, client)):
                if source in ready:
                    chunk = source.recv(65536)
                    if not chunk:
                        return
                    sink.sendall(chunk)
