"""A loopback forward proxy that relays every byte as it arrives, and logs what it relays.

It takes absolute-form requests for http:// targets (``GET http://host:port/path``, relayed one per
connection: the answer gets ``Connection: close``) and CONNECT tunnels for https:// ones, like the
corporate proxies HTTP_PROXY / HTTPS_PROXY name, and on the same port SOCKS5 tunnels without
authentication (``socks5://``, ``socks5h://``: the Splunk add-on's proxy setting). Nothing is
buffered: a peer trickling its answer trickles through the proxy too.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
from typing import BinaryIO, List, Tuple
from urllib.parse import urlsplit

import pytest

_DROPPED = ("proxy-connection", "proxy-authorization", "connection", "keep-alive")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def behind(monkeypatch: pytest.MonkeyPatch, proxy_url: str) -> None:
    """The environment of a run behind ``proxy_url``, for http:// and https://, with no exception."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy_url)
    monkeypatch.setenv("HTTPS_PROXY", proxy_url)


class ForwardProxy:
    def __init__(self) -> None:
        self.relayed: List[str] = []  # "METHOD target" per request, in arrival order
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="forward-proxy", daemon=True
        )

    def __enter__(self) -> ForwardProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    proxy: ForwardProxy


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        if self.rfile.peek(1)[:1] == b"\x05":
            self._socks5()
            return
        head = self.rfile.readline(65536).decode("latin-1")
        method, target, _version = head.split()
        headers = _read_headers(self.rfile)
        self.server.proxy.relayed.append(f"{method} {target}")
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
            _relay_answer(upstream, self.connection)

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
        self.server.proxy.relayed.append(f"SOCKS5 {host}:{port}")
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


def _relay_answer(upstream: socket.socket, client: socket.socket) -> None:
    """Every byte of the answer as it comes, with ``Connection: close`` after the status line: one
    request per connection, so the client never reuses one the proxy is closing."""
    status_line_done = False
    with contextlib.suppress(OSError):  # either side hung up: the relay is over
        while True:
            chunk = upstream.recv(65536)
            if not chunk:
                return
            if not status_line_done and b"\n" in chunk:
                at = chunk.index(b"\n") + 1
                chunk = chunk[:at] + b"Connection: close\r\n" + chunk[at:]
                status_line_done = True
            client.sendall(chunk)


def _pipe_both_ways(client: socket.socket, upstream: socket.socket) -> None:
    """The tunnel: bytes both ways until either side hangs up (then both are)."""

    def client_to_upstream() -> None:
        with contextlib.suppress(OSError):
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                upstream.sendall(chunk)
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_RDWR)

    sender = threading.Thread(target=client_to_upstream, name="forward-proxy-tunnel", daemon=True)
    sender.start()
    with contextlib.suppress(OSError):
        while True:
            chunk = upstream.recv(65536)
            if not chunk:
                break
            client.sendall(chunk)
    with contextlib.suppress(OSError):
        client.shutdown(socket.SHUT_RDWR)
    sender.join()
