"""Fault injection for the simulated API: what a hostile or broken service does to a client.

Armed per path prefix for the next ``n`` requests: error statuses (with ``Retry-After``), 200s whose
body is not what a client expects (an HTML page, a cut-off body, the wrong shape), replies broken on
the wire (trickled a byte at a time, status line included, or cut mid-body), bytes no JSON encoder
writes, tokens revoked at fixed points, latency, and error replies that quote the request.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import List, Optional, Set, Tuple

from .endpoints import AUDITS_PATH, Listing
from .messages import Reply, error_reply, json_reply

MALFORM_KINDS = ("html", "truncated", "wrong-shape", "not-list-items")
# a body, or the status line and headers, sent a byte at a time; a connection closed mid-body
BREAK_KINDS = ("trickle", "trickle-headers", "cut")
_HTML = b"<!DOCTYPE html><html><head><title>Maintenance</title></head><body>Back soon.</body></html>"


@dataclass
class Fault:
    remaining: int
    path_prefix: str
    status: int = 0
    retry_after: Optional[float] = None
    kind: str = ""
    old: bytes = b""
    new: bytes = b""


def malformed(kind: str, listing: Listing) -> Reply:
    """A 200 whose body is not what a client expects: a proxy's HTML page, a cut-off body, ..."""
    if kind == "html":
        return Reply(200, _HTML, {"Content-Type": "text/html; charset=utf-8"})
    if kind == "truncated":
        body = json_reply(200, listing.payload).body
        return Reply(200, body[: max(1, len(body) // 2)], {"Content-Type": "application/json"})
    if kind == "wrong-shape":
        return json_reply(200, {"version": 1, "status": "ok", "code": 200, "data": {"message": "ok"}})
    strings = ["unexpected", "strings"]
    if isinstance(listing.payload, dict):
        return json_reply(200, {**listing.payload, listing.key: strings, "count": len(strings)})
    return json_reply(200, strings)


class FaultInjection:
    """The faults armed on a simulator. Knobs are plain attributes or methods, safe from any thread."""

    def __init__(self) -> None:
        self.latency_seconds = 0.0  # before every reply
        self.trickle_seconds = 1.0  # pause between the bytes of a "trickle" body
        self.trickled: List[Tuple[int, int]] = []  # (bytes sent, bytes in the reply) per trickled reply
        self.echo = False  # error replies quote the request (form body, Authorization), as some do
        # Guards the armed faults, the audits count and ``trickled``: handler threads consume and
        # record while a test arms more.
        self._faults_lock = threading.Lock()
        self._failures: List[Fault] = []
        self._malforms: List[Fault] = []
        self._breaks: List[Fault] = []
        self._rewrites: List[Fault] = []
        self._revoke_at: Set[int] = set()
        self._audits_seen = 0

    def fail_next(
        self, n: int, status: int = 503, retry_after: Optional[float] = None, path_prefix: str = AUDITS_PATH
    ) -> None:
        """Answer the next ``n`` requests under ``path_prefix`` with ``status`` (before authentication)."""
        if status < 400:
            raise ValueError("a failure needs an error status")
        self._arm(self._failures, n, Fault(n, path_prefix, status=status, retry_after=retry_after))

    def malform_next(self, n: int, kind: str = "html", path_prefix: str = AUDITS_PATH) -> None:
        """Garble the next ``n`` successful list responses under ``path_prefix`` (see MALFORM_KINDS)."""
        if kind not in MALFORM_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MALFORM_KINDS)}")
        self._arm(self._malforms, n, Fault(n, path_prefix, kind=kind))

    def break_next(self, n: int, kind: str = "trickle", path_prefix: str = AUDITS_PATH) -> None:
        """Break the next ``n`` replies under ``path_prefix`` on the wire (see BREAK_KINDS)."""
        if kind not in BREAK_KINDS:
            raise ValueError(f"kind must be one of {', '.join(BREAK_KINDS)}")
        self._arm(self._breaks, n, Fault(n, path_prefix, kind=kind))

    def rewrite_next(self, n: int, old: bytes, new: bytes, path_prefix: str = AUDITS_PATH) -> None:
        """Replace ``old`` by ``new`` in the next ``n`` reply bodies under ``path_prefix`` holding it:
        bytes no JSON encoder writes (invalid UTF-8, a lone surrogate escape, a huge integer)."""
        self._arm(self._rewrites, n, Fault(n, path_prefix, old=old, new=new))

    def revoke_tokens_at(self, *audits_calls: int) -> None:
        """Revoke every token just before the audits request with each of these numbers (from 1):
        a token lost mid-run at a fixed point, whatever the timing of the rest of the run."""
        with self._faults_lock:
            self._revoke_at.update(audits_calls)

    def _arm(self, faults: List[Fault], n: int, fault: Fault) -> None:
        if n > 0:
            with self._faults_lock:
                faults.append(fault)

    # -- applying them, as a request is answered ---------------------------------------------------

    def _failure(self, path: str, echo: str) -> Optional[Reply]:
        """The injected error reply for this request, if one is armed for ``path``."""
        with self._faults_lock:
            failure = _take(self._failures, path)
        if failure is None:
            return None
        extra = {} if failure.retry_after is None else {"Retry-After": f"{failure.retry_after:g}"}
        return error_reply(failure.status, "injected failure" + echo, extra)

    def _revoke_due(self) -> bool:
        """Count one audits request; True when tokens are to be revoked just before it."""
        with self._faults_lock:
            self._audits_seen += 1
            return self._audits_seen in self._revoke_at

    def _encode(self, path: str, listing: Listing) -> Reply:
        """A list reply, garbled when a malformation is armed for ``path``."""
        with self._faults_lock:
            malform = _take(self._malforms, path)
        return json_reply(200, listing.payload) if malform is None else malformed(malform.kind, listing)

    def _on_wire(self, path: str, body: bytes) -> Tuple[str, bytes]:
        """How the reply goes out ("" whole, or one of BREAK_KINDS) and its body after any rewrite."""
        with self._faults_lock:
            wire = _take(self._breaks, path)
            rewrite = next(
                (f for f in self._rewrites if path.startswith(f.path_prefix) and f.old in body), None
            )
            if rewrite is not None:
                _use(self._rewrites, rewrite)
        body = body if rewrite is None else body.replace(rewrite.old, rewrite.new)
        return ("" if wire is None else wire.kind), body

    def trickle_ended(self, sent: int, total: int) -> None:
        with self._faults_lock:
            self.trickled.append((sent, total))

    def _echo(self, body: bytes, authorization: Optional[str]) -> str:
        if not self.echo:
            return ""
        return f" (request: {body.decode('utf-8', 'replace')} {authorization or ''})"


def _take(faults: List[Fault], path: str) -> Optional[Fault]:
    """Consume one use of the first fault armed for ``path``. Caller holds the lock."""
    fault = next((f for f in faults if path.startswith(f.path_prefix)), None)
    if fault is not None:
        _use(faults, fault)
    return fault


def _use(faults: List[Fault], fault: Fault) -> None:
    """Caller holds the lock."""
    fault.remaining -= 1
    if fault.remaining <= 0:
        faults.remove(fault)
