"""A loopback relay in front of the moto server that can hold one request until the test lets it go:
a state write in flight at the moment a test chooses (``hold_next``, ``held``, ``release``)."""

from __future__ import annotations

import threading
from typing import Dict, Optional, Tuple

import requests

from .http_collector import LoopbackReceiver, Reply

_HOP = ("host", "connection", "content-length", "transfer-encoding", "keep-alive")


class HoldingRelay(LoopbackReceiver):
    name = "holding-relay"

    def __init__(self, upstream: str) -> None:
        super().__init__()
        self._upstream = upstream.rstrip("/")
        self._hold: Optional[Tuple[str, str]] = None  # (method, part of the target) of the request to hold
        self.held = threading.Event()  # set when that request arrives
        self._released = threading.Event()

    def hold_next(self, method: str, target_part: str) -> None:
        with self.lock:
            self._hold = (method, target_part)

    def release(self) -> None:
        self._released.set()

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        with self.lock:
            hold = self._hold is not None and method == self._hold[0] and self._hold[1] in target
            if hold:
                self._hold = None
        if hold:
            self.held.set()
            self._released.wait(60)
        sent = {k: v for k, v in headers.items() if k not in _HOP}
        reply = requests.request(method, self._upstream + target, headers=sent, data=raw, timeout=30)
        back = {k: v for k, v in reply.headers.items() if k.lower() not in (*_HOP, "content-encoding")}
        return reply.status_code, reply.content, back
