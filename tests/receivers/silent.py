"""A loopback TCP server that accepts connections and never answers: a peer that never replies,
and a witness that no connection was made (``accepted``); and ``closed_port``, where nothing listens."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Iterator, List


class Silent:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.accepted: List[socket.socket] = []
        threading.Thread(target=self._accept, name="silent", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)  # held open, never read

    def __enter__(self) -> Silent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses every connection while the block runs."""
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        yield sock.getsockname()[1]
    finally:
        sock.close()
