"""The life cycle every test server shares: a socketserver on 127.0.0.1 at a free port, served by a
daemon thread for the length of a ``with`` block; its handlers reach the test server as ``owner``."""

from __future__ import annotations

import socketserver
import threading
from typing import Type, TypeVar

S = TypeVar("S", bound="LoopbackServer")


class LoopbackServer:
    name = "loopback"

    def __init__(
        self,
        handler: Type[socketserver.BaseRequestHandler],
        server_type: Type[socketserver.ThreadingTCPServer] = socketserver.ThreadingTCPServer,
    ) -> None:
        self._server = server_type(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._server.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name=self.name, daemon=True
        )

    def __enter__(self: S) -> S:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    @property
    def port(self) -> int:
        return self._server.server_address[1]
