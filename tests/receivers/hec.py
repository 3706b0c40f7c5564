"""A loopback Splunk HTTP Event Collector, faithful enough to catch protocol mistakes.

It checks ``Authorization: Splunk <token>``, decodes gzip, parses the body as concatenated JSON
envelopes the way HEC does and answers with HEC's status codes and ``{"text", "code"}`` replies:

====  ====  ===============================
HTTP  code  text
====  ====  ===============================
401   2     Token is required
401   3     Invalid authorization
403   4     Invalid token
400   5     No data
400   6     Invalid data format (with ``invalid-event-number``)
400   10    Data channel is missing
400   11    Invalid data channel
400   12    Event field is required
400   13    Event field cannot be blank
400   14    ACK is disabled
413         the body is over ``max_content_length`` (on the wire or once decompressed)
====  ====  ===============================

One simplification: a request with a bad envelope is refused as a whole (real HEC may already have
indexed the envelopes before the bad one).

Indexer acknowledgement (``ack=True``): event requests need a GUID channel (header
``X-Splunk-Request-Channel`` or ``?channel=``) and get an ``ackId`` per channel; ``POST
/services/collector/ack`` answers ``{"acks": {"<id>": bool}}``. An ack turns true after it has been
asked about ``ack_delay_polls`` times (a count rather than a clock keeps tests deterministic; None:
never) and, as in Splunk, is forgotten once reported true.

Fault knobs act on event requests only, in the order they were set up: ``fail_next``,
``drop_connection_next``, ``accept_then_fail_next``.
"""

from __future__ import annotations

import http
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from .http_collector import BadBody, Fault, LoopbackReceiver, Reply, TooLarge, decode_body, json_reply
from .http_collector import _Handler as _Handler  # tests/aws/test_handler.py tunes it through this module

EVENT_PATHS = ("/services/collector", "/services/collector/event", "/services/collector/event/1.0")
ACK_PATH = "/services/collector/ack"
HEALTH_PATH = "/services/collector/health"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_HEX64 = re.compile(r"\b[0-9a-f]{64}\b")
_BUSY = {503: (9, "Server is busy"), 500: (8, "Internal server error")}


def _is_health(envelope: Dict[str, Any]) -> bool:
    return str(envelope.get("sourcetype", "")).endswith(":health")


class HecReply(Exception):
    """An answer other than success, raised from deep inside request handling."""

    def __init__(self, status: int, code: Optional[int], text: str, **extra: Any) -> None:
        super().__init__(text)
        self.status = status
        self.body: Dict[str, Any] = {"text": text, **({"code": code} if code is not None else {}), **extra}


@dataclass(frozen=True)
class Received:
    envelope: Dict[str, Any]  # the parsed envelope: time, host, source, sourcetype, index, event
    raw: bytes  # the envelope exactly as it was sent
    channel: Optional[str]
    request: int = 0  # 1, 2, ...: which accepted request carried it (one request, one sender's batch)


def hec_reply(status: int, body: Dict[str, Any], headers: Optional[Dict[str, str]] = None) -> Reply:
    return json_reply(status, body, {"Content-Type": "application/json; charset=UTF-8", **(headers or {})})


def parse_envelopes(text: str) -> List[Tuple[Dict[str, Any], str]]:
    """Split a HEC body into (envelope, raw text) pairs, validating each like HEC does."""
    decoder = json.JSONDecoder()
    found: List[Tuple[Dict[str, Any], str]] = []
    pos = _WHITESPACE.match(text, 0).end()  # type: ignore[union-attr]
    while pos < len(text):
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            value, end = None, pos
        if not isinstance(value, dict):
            raise HecReply(400, 6, "Invalid data format", **{"invalid-event-number": len(found)})
        _validate(value, len(found))
        found.append((value, text[pos:end]))
        pos = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
    if not found:
        raise HecReply(400, 5, "No data")
    return found


def _validate(envelope: Dict[str, Any], number: int) -> None:
    where = {"invalid-event-number": number}
    if "event" not in envelope:
        raise HecReply(400, 12, "Event field is required", **where)
    event = envelope["event"]
    if event is None or (isinstance(event, str) and not event.strip()):
        raise HecReply(400, 13, "Event field cannot be blank", **where)
    if "time" in envelope and not _is_epoch(envelope["time"]):
        raise HecReply(400, 6, "Invalid data format", **where)
    for key in ("host", "source", "sourcetype", "index"):
        if key in envelope and not isinstance(envelope[key], str):
            raise HecReply(400, 6, "Invalid data format", **where)
    if "fields" in envelope and not isinstance(envelope["fields"], dict):
        raise HecReply(400, 6, "Invalid data format", **where)


def _is_epoch(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return False


def event_id(envelope: Dict[str, Any]) -> Optional[str]:
    """The forwarder's event id: ``event.id`` (ECS), ``metadata.uid`` (OCSF), a hex id in a CEF line."""
    event = envelope.get("event")
    if isinstance(event, str):
        match = _HEX64.search(event)
        return match.group(0) if match else None
    if not isinstance(event, dict):
        return None
    for outer, inner in (("event", "id"), ("metadata", "uid")):
        nested = event.get(outer)
        if isinstance(nested, dict) and isinstance(nested.get(inner), str):
            return nested[inner]
    flat = event.get("event.id", event.get("_id"))
    return flat if isinstance(flat, str) else None


def _is_guid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class HecReceiver(LoopbackReceiver):
    name = "hec-receiver"

    def __init__(
        self,
        token: str = "00000000-feed-beef-cafe-000000000000",
        *,
        ack: bool = False,
        ack_delay_polls: Optional[int] = 0,
        max_content_length: int = 1_000_000,
        prefix: str = "",
    ) -> None:
        super().__init__()
        self.token = token
        self.ack = ack
        self.ack_delay_polls = ack_delay_polls
        self.max_content_length = max_content_length
        self.prefix = prefix.rstrip("/")
        self.health = True  # GET .../services/collector/health answered (a proxy may route events only)
        self._received: List[Received] = []
        self._next_ack: Dict[str, int] = {}
        self._pending_acks: Dict[Tuple[str, int], int] = {}  # (channel, ackId) -> times asked
        self._ack_answers: List[Dict[str, bool]] = []
        # Called with the count of accepted requests after the events are stored and before the
        # reply: a test can kill the sender there, between delivery and its state commit.
        self.after_accept: Optional[Callable[[int], None]] = None
        self._accepted_requests = 0

    @property
    def http_url(self) -> str:
        return super().http_url + self.prefix

    @property
    def url(self) -> str:
        """The FORWARDER_SINK value that reaches this receiver."""
        return "hec+" + self.http_url

    # --- what arrived -----------------------------------------------------------------------------

    def events(self) -> List[Dict[str, Any]]:
        """The audit events' envelopes: the runs' health events (``health_events``) left out."""
        with self.lock:
            return [item.envelope for item in self._received if not _is_health(item.envelope)]

    def health_events(self) -> List[Dict[str, Any]]:
        """The envelopes of the runs' health events (sourcetype ``<sourcetype>:health``)."""
        with self.lock:
            return [item.envelope for item in self._received if _is_health(item.envelope)]

    def received(self) -> List[Received]:
        with self.lock:
            return list(self._received)

    def event_ids(self) -> List[Optional[str]]:
        return [event_id(envelope) for envelope in self.events()]

    def forget_events(self) -> None:
        """Drop what arrived so far (benchmarks: millions of kept envelopes would slow the
        receiver's own garbage collection, and with it whatever is measured after them)."""
        self.take_events()

    def take_events(self) -> List[Received]:
        """What arrived so far, dropped from the receiver at once: a benchmark that logs arrivals
        as they come neither keeps them all nor misses one that arrives meanwhile."""
        with self.lock:
            taken, self._received = self._received, []
        return taken

    def ack_answers(self) -> List[Dict[str, bool]]:
        with self.lock:
            return list(self._ack_answers)

    # --- protocol ---------------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        """Routes first: the base's fault knobs then act on event requests only."""
        path = urlsplit(target).path.rstrip("/")
        try:
            if self.health and method == "GET" and path == self.prefix + HEALTH_PATH:  # no token needed
                return hec_reply(200, {"text": "HEC is healthy", "code": 17})
            if method != "POST" or not path.startswith(self.prefix):
                raise HecReply(404, 404, "The requested URL was not found on this server.")
            route = path[len(self.prefix) :]
            if route == ACK_PATH:
                self._authorize(headers)
                return hec_reply(200, self._ack_query(_channel(target, headers), raw))
            if route not in EVENT_PATHS:
                raise HecReply(404, 404, "The requested URL was not found on this server.")
            return super().handle(method, target, headers, raw)
        except HecReply as answer:
            return hec_reply(answer.status, answer.body)

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        self._authorize(headers)
        reply = self._accept(_channel(target, headers), headers, raw)
        if self.after_accept is not None:
            self.after_accept(self._accepted_requests)
        return hec_reply(200, reply)

    def fault_reply(self, fault: Fault) -> Reply:
        code, text = _BUSY.get(fault.status, (None, http.HTTPStatus(fault.status).phrase))
        return hec_reply(fault.status, HecReply(fault.status, code, text).body, fault.headers)

    def _authorize(self, headers: Dict[str, str]) -> None:
        value = headers.get("authorization")
        if value is None:
            raise HecReply(401, 2, "Token is required")
        scheme, _, token = value.partition(" ")
        if scheme != "Splunk" or not token:
            raise HecReply(401, 3, "Invalid authorization")
        if token != self.token:
            raise HecReply(403, 4, "Invalid token")

    def _check_channel(self, channel: Optional[str]) -> str:
        if not channel:
            raise HecReply(400, 10, "Data channel is missing")
        if not _is_guid(channel):
            raise HecReply(400, 11, "Invalid data channel")
        return channel

    def _body_text(self, headers: Dict[str, str], raw: bytes) -> str:
        limit = self.max_content_length
        try:
            return decode_body(headers, raw, limit).decode("utf-8")
        except TooLarge:
            raise HecReply(413, None, f"Content too large (maximum is {limit} bytes)") from None
        except (BadBody, UnicodeDecodeError):
            raise HecReply(400, 6, "Invalid data format") from None

    def _accept(self, channel: Optional[str], headers: Dict[str, str], raw: bytes) -> Dict[str, Any]:
        if self.ack:
            channel = self._check_channel(channel)
        envelopes = parse_envelopes(self._body_text(headers, raw))
        with self.lock:
            self._accepted_requests += 1
            number = self._accepted_requests
            self._received.extend(
                Received(env, text.encode("utf-8"), channel, number) for env, text in envelopes
            )
            if not self.ack or channel is None:
                return {"text": "Success", "code": 0}
            ack_id = self._next_ack.get(channel, 0)
            self._next_ack[channel] = ack_id + 1
            self._pending_acks[(channel, ack_id)] = 0
        return {"text": "Success", "code": 0, "ackId": ack_id}

    def _ack_query(self, channel: Optional[str], raw: bytes) -> Dict[str, Any]:
        if not self.ack:
            raise HecReply(400, 14, "ACK is disabled")
        channel = self._check_channel(channel)
        try:
            asked = json.loads(raw)["acks"]
            ids = [int(i) for i in asked if not isinstance(i, bool)]
        except (ValueError, KeyError, TypeError):
            raise HecReply(400, 6, "Invalid data format") from None
        answer: Dict[str, bool] = {}
        with self.lock:
            if channel not in self._next_ack:
                raise HecReply(400, 11, "Invalid data channel")
            for ack_id in ids:
                key = (channel, ack_id)
                answer[str(ack_id)] = done = key in self._pending_acks and self._ack_due(key)
                if done:
                    del self._pending_acks[key]  # HEC forgets an ack once it has reported it
            self._ack_answers.append(dict(answer))
        return {"acks": answer}

    def _ack_due(self, key: Tuple[str, int]) -> bool:
        asked = self._pending_acks[key]
        self._pending_acks[key] = asked + 1
        return self.ack_delay_polls is not None and asked >= self.ack_delay_polls


def _channel(target: str, headers: Dict[str, str]) -> Optional[str]:
    """The channel from the header, else from ``?channel=``."""
    in_query = parse_qs(urlsplit(target).query).get("channel", [])
    return headers.get("x-splunk-request-channel") or (in_query[0] if in_query else None)
