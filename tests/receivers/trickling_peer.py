"""A loopback peer that answers any request 200, a byte at a time from the status line on, over HTTP
or TLS: every read returns within a socket timeout, the headers never arrive within a deadline."""

from __future__ import annotations

import contextlib
import socketserver
import ssl
import threading
import time
from typing import Callable, List, Optional, Type

from tests.receivers.loopback import LoopbackServer

REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


class Trickler(LoopbackServer):
    """A loopback server whose handler sends with :meth:`trickle`: a byte every ``pause`` seconds."""

    def __init__(self, handler: Type[socketserver.BaseRequestHandler], pause: float) -> None:
        self.pause = pause
        self.finished = threading.Event()  # a trickle came to its last byte
        self.ended = threading.Event()  # a trickle ended: its client hung up, or all was sent
        self.hangups: List[int] = []  # bytes sent when each trickle ended (all of them: not cut)
        self.stopped = threading.Event()
        super().__init__(handler)

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()  # the trickles in progress end at their next byte
        super().__exit__(*exc)

    def trickle(self, send: Callable[[bytes], object], data: bytes) -> None:
        sent = 0
        with contextlib.suppress(OSError):  # the client hung up: that is the point
            while sent < len(data) and not self.stopped.is_set():
                if sent == len(data) - 1:  # set first: a client the last byte freed sees it set
                    self.finished.set()
                send(data[sent : sent + 1])
                sent += 1
                time.sleep(self.pause)
        self.hangups.append(sent)
        self.ended.set()


class TricklingPeer(Trickler):
    name = "trickling-peer"

    def __init__(self, pause: float = 0.2, tls: Optional[ssl.SSLContext] = None) -> None:
        self.tls = tls
        self.requests: List[str] = []  # "METHOD path" per request
        super().__init__(_Handler, pause)

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
        peer: TricklingPeer = self.server.owner
        method, path, _version = self.rfile.readline(65536).decode("latin-1").split()
        length = 0
        for line in iter(self.rfile.readline, b"\r\n"):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        self.rfile.read(length)
        peer.requests.append(f"{method} {path}")
        peer.trickle(self.wfile.write, REPLY)  # unbuffered: each byte is sent as it is written
