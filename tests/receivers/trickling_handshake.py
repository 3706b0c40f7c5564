"""A loopback peer that waits for a client's first bytes (a TLS client hello, a SOCKS greeting), then
sends a fixed opening a byte at a time, reading nothing more: a TLS server's first record or a SOCKS5
proxy's reply, trickled so that every read returns within a socket timeout while the handshake never
ends within a deadline."""

from __future__ import annotations

import socketserver
import threading

from tests.receivers.trickling_peer import Trickler

# A TLS handshake record announcing 16 KB (a server hello with its certificates, say), then zeros.
TLS_OPENING = b"\x16\x03\x03\x40\x00" + bytes(45)
# SOCKS5: "no authentication", then "granted, bound to <a 40-letter name>:80".
SOCKS5_OPENING = b"\x05\x00" + b"\x05\x00\x00\x03\x28" + b"b" * 40 + b"\x00\x50"


class TricklingHandshake(Trickler):
    name = "trickling-handshake"

    def __init__(self, opening: bytes, pause: float = 0.2) -> None:
        self.opening = opening
        self.trickling = threading.Event()  # a client began its handshake, and its trickle began
        super().__init__(_Handler, pause)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        peer: TricklingHandshake = self.server.owner  # type: ignore[attr-defined]
        try:
            self.request.recv(65536)
        except OSError:
            return
        peer.trickling.set()
        peer.trickle(self.request.sendall, peer.opening)
