"""A loopback HTTP forward proxy (absolute-form requests, no CONNECT) that logs what it relays."""

from __future__ import annotations

from typing import Dict, List

import requests

from tests.receivers.http_collector import LoopbackReceiver, Reply

_HOP_BY_HOP = (
    "host",
    "proxy-connection",
    "connection",
    "content-length",
    "transfer-encoding",
    "content-encoding",
)


class ForwardProxy(LoopbackReceiver):
    name = "forward-proxy"

    def __init__(self) -> None:
        super().__init__()
        self.relayed: List[str] = []
        self.url = self.http_url

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        self.relayed.append(f"{method} {target}")
        with requests.Session() as session:
            session.trust_env = False
            sent = {k: v for k, v in headers.items() if k not in _HOP_BY_HOP}
            reply = session.request(method, target, data=raw, headers=sent, timeout=30)
        back = {k: v for k, v in reply.headers.items() if k.lower() not in _HOP_BY_HOP}
        return reply.status_code, reply.content, back
