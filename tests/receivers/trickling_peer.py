"""A loopback peer that answers any request 200, a byte at a time from the status line on, over HTTP
or TLS: every read returns within a socket timeout, the headers never arrive within a deadline."""

from __future__ import annotations

import contextlib
import socketserver
import ssl
import threading
import time
from typing import List, Optional

from tests.receivers.loopback import LoopbackServer

REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


class TricklingPeer(LoopbackServer):
    name = "trickling-peer"

    def __init__(self, pause: float = 0.2, tls: Optional[ssl.SSLContext] = None) -> None:
        self.pause = pause
        self.tls = tls
        self.requests: List[str] = []  # "METHOD path" per request
        self.hangups: List[int] = []  # bytes of REPLY sent when the client hung up, per request
        self.stopped = threading.Event()
        super().__init__(_Handler)

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()  # the trickles in progress end at their next byte
        super().__exit__(*exc)

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
        sent = 0
        with contextlib.suppress(OSError):  # the client hung up: that is the point
            while sent < len(REPLY) and not peer.stopped.is_set():
                self.wfile.write(REPLY[sent : sent + 1])
                self.wfile.flush()
                sent += 1
                time.sleep(peer.pause)
        peer.hangups.append(sent)
