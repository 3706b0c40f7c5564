"""A loopback HTTP collector taking NDJSON POSTs (Logstash ``http`` input, Cribl, Sumo Logic alike),
and the small server base the ``_bulk`` and HEC receivers share.

The collector checks the ``Authorization`` header and any required headers (401), decodes gzip,
answers 413 when the body is over ``max_content_length`` (on the wire or decompressed), 400 for a
body that is not UTF-8 NDJSON, and 200 otherwise. Fault knobs, in the order they were set up:
``fail_next`` (a status, optionally with ``Retry-After``), ``drop_connection_next``, and the lies and
stalls of what stands in front of real receivers: ``html_ok_next`` (a proxy's 200 web page, nothing
stored), ``trickle_next`` (the reply a byte at a time), ``cut_next`` (the reply closed mid-body),
``garble_next`` (a reply claiming gzip that is not).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Deque, Dict, List, Mapping, Optional, Tuple

from tests.receivers.loopback import LoopbackServer

Reply = Tuple[Optional[int], bytes, Dict[str, str]]  # status None: drop the connection
PROXY_PAGE = b"<!DOCTYPE html><html><body><h1>Welcome</h1>Please sign in.</body></html>"


class TooLarge(Exception):
    pass


class BadBody(Exception):
    pass


@dataclass(frozen=True)
class Seen:
    """One request as it arrived, whatever the answer."""

    path: str
    headers: Dict[str, str]
    wire_bytes: int
    status: Optional[int]  # None: the connection was dropped


@dataclass(frozen=True)
class Fault:
    kind: str  # "fail", "drop", "accept_then_fail", "html_ok", "trickle", "cut", "garble"
    status: int = 503
    retry_after: Optional[str] = None

    @property
    def headers(self) -> Dict[str, str]:
        return {"Retry-After": self.retry_after} if self.retry_after else {}


def decode_body(headers: Mapping[str, str], raw: bytes, limit: int) -> bytes:
    """The body with gzip undone; TooLarge past ``limit`` bytes either way, BadBody for broken gzip."""
    if len(raw) > limit:
        raise TooLarge()
    if headers.get("content-encoding", "").lower() == "gzip":
        inflater = zlib.decompressobj(wbits=31)
        try:
            raw = inflater.decompress(raw, limit + 1)
        except zlib.error:
            raise BadBody("invalid gzip") from None
        if len(raw) > limit:
            raise TooLarge()
        if not inflater.eof:
            raise BadBody("truncated gzip")
    return raw


def json_reply(status: int, payload: Any, headers: Optional[Dict[str, str]] = None) -> Reply:
    return (
        status,
        json.dumps(payload).encode("utf-8"),
        {"Content-Type": "application/json", **(headers or {})},
    )


class LoopbackReceiver(LoopbackServer):
    """Life cycle, fault queue and request log; subclasses implement ``answer`` and may word the
    injected failures in their protocol's format (``fault_reply``)."""

    name = "receiver"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._seen: List[Seen] = []
        self._faults: Deque[Fault] = deque()
        self.trickle_seconds = 1.0
        super().__init__(_Handler, ThreadingHTTPServer)

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fail_next(self, n: int, status: int = 503, retry_after: Optional[float] = None) -> None:
        header = None if retry_after is None else f"{retry_after:g}"
        self._add(n, Fault("fail", status, header))

    def drop_connection_next(self, n: int) -> None:
        self._add(n, Fault("drop"))

    def accept_then_fail_next(self, n: int) -> None:
        """Keep what arrives, then answer 503: a response lost after the data was stored."""
        self._add(n, Fault("accept_then_fail"))

    def html_ok_next(self, n: int) -> None:
        """Answer 200 with a web page and store nothing: a proxy or load balancer in front."""
        self._add(n, Fault("html_ok"))

    def trickle_next(self, n: int, pause: float = 1.0) -> None:
        """Store, then send the reply one byte per ``pause`` seconds."""
        self.trickle_seconds = pause
        self._add(n, Fault("trickle"))

    def cut_next(self, n: int) -> None:
        """Store, then close the connection halfway through the reply's body."""
        self._add(n, Fault("cut"))

    def garble_next(self, n: int) -> None:
        """Store, then answer with ``Content-Encoding: gzip`` over a body that is not gzip."""
        self._add(n, Fault("garble"))

    def _add(self, n: int, fault: Fault) -> None:
        with self.lock:
            self._faults.extend([fault] * n)

    def seen(self) -> List[Seen]:
        """Every request, in arrival order."""
        with self.lock:
            return list(self._seen)

    def handle(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        with self.lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None and fault.kind == "drop":
            return None, b"", {}
        if fault is not None and fault.kind == "fail":
            return self.fault_reply(fault)
        if fault is not None and fault.kind == "html_ok":
            return 200, PROXY_PAGE, {"Content-Type": "text/html; charset=utf-8"}
        reply = self.answer(method, target, headers, raw)
        if fault is not None and fault.kind in ("trickle", "cut"):
            status, body, extra = reply
            return status, body, {**extra, "X-Test-Wire": fault.kind}
        if fault is not None and fault.kind == "garble":
            return reply[0], b"this is not gzip", {**reply[2], "Content-Encoding": "gzip"}
        if fault is not None:  # accept_then_fail
            return self.fault_reply(fault)
        return reply

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        raise NotImplementedError

    def fault_reply(self, fault: Fault) -> Reply:
        error = "injected after accepting" if fault.kind == "accept_then_fail" else "injected"
        return json_reply(fault.status, {"error": error, "status": fault.status}, fault.headers)

    def record(self, seen: Seen) -> None:
        with self.lock:
            self._seen.append(seen)


class HttpCollector(LoopbackReceiver):
    """Accepts ``POST <path>`` with NDJSON; ``lines()`` gives every line received, in order."""

    name = "http-collector"

    def __init__(
        self,
        path: str = "/ingest",
        authorization: Optional[str] = None,  # the exact Authorization value required, if any
        required_headers: Optional[Dict[str, str]] = None,
        max_content_length: int = 1_000_000,
    ) -> None:
        super().__init__()
        self.path = path
        self.authorization = authorization
        self.required_headers = dict(required_headers or {})
        self.max_content_length = max_content_length
        self._lines: List[bytes] = []

    @property
    def url(self) -> str:
        return self.http_url + self.path

    def lines(self) -> List[bytes]:
        with self.lock:
            return list(self._lines)

    def json_lines(self) -> List[Any]:
        return [json.loads(line) for line in self.lines()]

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        if self.authorization is not None and headers.get("authorization") != self.authorization:
            return json_reply(401, {"error": "unauthorized"})
        if method != "POST" or target.split("?")[0] != self.path:
            return json_reply(404, {"error": "not found"})
        for name, value in self.required_headers.items():
            if headers.get(name.lower()) != value:
                return json_reply(400, {"error": f"header {name} missing or wrong"})
        try:
            text = decode_body(headers, raw, self.max_content_length).decode("utf-8")
        except TooLarge:
            return json_reply(413, {"error": "payload too large"})
        except (BadBody, UnicodeDecodeError) as exc:
            return json_reply(400, {"error": f"bad body: {exc}"})
        if not text.endswith("\n"):
            return json_reply(400, {"error": "NDJSON lines must end with a newline"})
        lines = [line.encode("utf-8") for line in text.split("\n")[:-1]]
        with self.lock:
            self._lines.extend(lines)
        return json_reply(200, {"accepted": len(lines)})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the sink's connection reuse gets exercised
    disable_nagle_algorithm = True

    def _serve(self) -> None:
        receiver: LoopbackReceiver = self.server.owner  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {key.lower(): value for key, value in self.headers.items()}
        status, body, extra = receiver.handle(self.command, self.path, headers, raw)
        receiver.record(Seen(self.path.split("?")[0], headers, len(raw), status))
        if status is None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        wire = extra.pop("X-Test-Wire", None)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        if wire == "cut":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif wire == "trickle":
            with contextlib.suppress(OSError):  # the client gave up: that is the point
                for at in range(len(body)):
                    self.wfile.write(body[at : at + 1])
                    self.wfile.flush()
                    time.sleep(receiver.trickle_seconds)
        else:
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:  # keep test output readable
        pass
