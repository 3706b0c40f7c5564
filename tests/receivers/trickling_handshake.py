"""A loopback peer that waits for a client's first bytes (a TLS client hello, a SOCKS greeting), then
sends a fixed opening a byte at a time, reading nothing more: a TLS server's first record or a SOCKS5
proxy's reply, trickled so that every read returns within a socket timeout while the handshake never
ends within a deadline."""

from __future__ import annotations

import contextlib
import socketserver
import threading
import time
from typing import List

from tests.receivers.loopback import LoopbackServer

# A TLS handshake record announcing 16 KB (a server hello with its certificates, say), then zeros.
TLS_OPENING = b"\x16\x03\x03\x40\x00" + bytes(45)
# SOCKS5: "no authentication", then "granted, bound to <a 40-letter name>:80".
SOCKS5_OPENING = b"\x05\x00" + b"\x05\x00\x00\x03\x28" + b"b" * 40 + b"\x00\x50"


class TricklingHandshake(LoopbackServer):
    name = "trickling-handshake"

    def __init__(self, opening: bytes, pause: float = 0.2) -> None:
        self.opening = opening
        self.pause = pause
        self.trickling = threading.Event()  # a client began its handshake, and its trickle began
        self.finished = threading.Event()  # a trickle came to its last byte
        self.hung_up = threading.Event()  # a client hung up before the trickle's end
        self.hangups: List[int] = []  # bytes of the opening sent when the client hung up
        self.stopped = threading.Event()
        super().__init__(_Handler)

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()  # the trickles in progress end at their next byte
        super().__exit__(*exc)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        peer: TricklingHandshake = self.server.owner  # type: ignore[attr-defined]
        sent = 0
        with contextlib.suppress(OSError):  # the client hung up: that is the point
            self.request.recv(65536)
            peer.trickling.set()
            while sent < len(peer.opening) and not peer.stopped.is_set():
                if sent == len(peer.opening) - 1:  # set first: a client the last byte freed sees it set
                    peer.finished.set()
                self.request.sendall(peer.opening[sent : sent + 1])
                sent += 1
                time.sleep(peer.pause)
        if sent < len(peer.opening):
            peer.hangups.append(sent)
            peer.hung_up.set()
