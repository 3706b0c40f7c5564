"""A loopback stand-in in front of the moto server for S3: every request is passed on to moto and
moto's answer given back, so objects really land in the moto bucket; the fault queue of
``LoopbackReceiver`` (``fail_next``, ``accept_then_fail_next``, ``drop_connection_next``) stages what
moto cannot: 503 SlowDown, 500 InternalError, an answer lost after the object was stored. Each PUT
that moto stored is logged (``puts``: the run ``phase`` it came in, its key); ``after_put`` is
called with their count (a test kills the forwarder there)."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

import requests

from .http_collector import Fault, LoopbackReceiver, Reply

_PASSED = ("content-type", "content-md5", "x-amz-", "authorization", "if-")
_ERRORS = {503: "SlowDown", 500: "InternalError"}


class S3Front(LoopbackReceiver):
    name = "s3-front"

    def __init__(self, moto_url: str) -> None:
        super().__init__()
        self.moto_url = moto_url
        self.phase = 1
        self.puts: List[Tuple[int, str]] = []  # (phase, key) of each PUT moto stored
        self.after_put: Optional[Callable[[int], None]] = None

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        passed = {k: v for k, v in headers.items() if k.startswith(_PASSED)}
        reply = requests.request(method, self.moto_url + target, headers=passed, data=raw, timeout=30)
        kept = {
            k: v
            for k, v in reply.headers.items()
            if k.lower() in ("etag", "content-type") or k.lower().startswith("x-amz-")
        }
        if method == "PUT" and reply.status_code == 200:
            bucket_key = unquote(urlsplit(target).path).lstrip("/")
            with self.lock:
                self.puts.append((self.phase, bucket_key.split("/", 1)[1]))
                count = len(self.puts)
            if self.after_put is not None:
                self.after_put(count)
        return reply.status_code, reply.content, kept

    def fault_reply(self, fault: Fault) -> Reply:
        code = _ERRORS.get(fault.status or 0, "InternalError")
        body = f"<Error><Code>{code}</Code><Message>injected</Message></Error>".encode()
        return fault.status, body, {"Content-Type": "application/xml"}
