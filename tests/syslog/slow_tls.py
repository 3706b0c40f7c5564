"""A TLS 1.3 syslog receiver on loopback that reads late, the case that lost events silently: it sends
its session tickets at the end of the handshake (as TLS 1.3 servers do), waits before reading, then
counts the octet-counted frames up to the client's end and answers it the way the test asks.

A client that closes without reading the tickets makes its kernel answer them with a reset, and the
reset makes this receiver's kernel discard whatever it had not yet read: ``frames`` comes up short and
``error`` names the reset.
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
from pathlib import Path
from typing import List, Optional, Tuple

from .rsyslog import make_certificates

READ_DELAY_SECONDS = 0.15  # long enough for a client to have closed, never a measurement
TRICKLE_SECONDS = 0.1  # between two bytes of a receiver that never ends: less than any timeout


def messages_in(data: bytes) -> List[bytes]:
    """The messages of octet-counted frames (``<length> <message>``); a cut-off last frame is dropped."""
    messages, at = [], 0
    while True:
        space = data.find(b" ", at)
        if space < 0:
            return messages
        end = space + 1 + int(data[at:space])
        if end > len(data):
            return messages
        messages.append(data[space + 1 : end])
        at = end


class SlowTlsReceiver:
    """Serves one connection per ``start`` (in a thread); ``result`` once the client is done.

    ``reply``: ``close_notify`` answers the client's close_notify with its own, as RFC 5425 asks;
    ``eof`` closes TCP without one; ``reset`` ends it with a reset; ``silent`` never answers and keeps
    the connection open; ``trickle`` keeps sending a byte now and then instead of ending. ``read_all``
    is set once the client's end was read."""

    def __init__(self, directory: Path) -> None:
        make_certificates(directory)
        self.ca_bundle = str(directory / "ca.pem")
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.minimum_version = ssl.TLSVersion.TLSv1_3
        self._context.load_cert_chain(directory / "server.pem", directory / "server-key.pem")
        self._context.num_tickets = 2
        self.reply = "close_notify"
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(10)
        self.port = self._listener.getsockname()[1]
        self.messages: List[bytes] = []
        self.error: Optional[BaseException] = None
        self._thread: Optional[threading.Thread] = None
        self._release = threading.Event()
        self.read_all = threading.Event()

    @property
    def uri(self) -> str:
        return f"syslog+tls://localhost:{self.port}"

    def start(self) -> None:
        self.messages, self.error = [], None
        self._release.clear()
        self.read_all.clear()
        self._thread = threading.Thread(target=self._serve_one, daemon=True)
        self._thread.start()

    def result(self) -> Tuple[List[bytes], Optional[BaseException]]:
        """The messages of the last connection and what went wrong there, once it ended."""
        self._release.set()
        assert self._thread is not None
        self._thread.join(timeout=20)
        return self.messages, self.error

    def _serve_one(self) -> None:
        data = bytearray()
        try:
            raw, _ = self._listener.accept()
            with self._context.wrap_socket(raw, server_side=True) as conn:  # handshake, then tickets
                conn.settimeout(10)
                time.sleep(READ_DELAY_SECONDS)
                while True:
                    chunk = conn.recv(65536)  # b"" at the client's close_notify
                    if not chunk:
                        break
                    data += chunk
                self.read_all.set()
                if self.reply == "close_notify":
                    conn.unwrap().close()
                elif self.reply == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                elif self.reply == "silent":
                    self._release.wait(timeout=20)
                elif self.reply == "trickle":
                    while not self._release.wait(TRICKLE_SECONDS):
                        conn.send(b".")
        except (OSError, ValueError) as exc:
            self.error = exc
        self.messages = messages_in(bytes(data))

    def close(self) -> None:
        self._release.set()
        self._listener.close()
