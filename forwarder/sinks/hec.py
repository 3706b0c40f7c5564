"""Splunk HTTP Event Collector sink: ``hec+https://splunk.example.com:8088`` (``hec+http://`` for loopback).

Protocol choices, from Splunk's HEC REST documentation:

* Endpoint. A URI without a path posts to ``/services/collector/event``. A path that contains
  ``/services/collector`` is used as the event endpoint as it is; any other path is a prefix (a load
  balancer's) put in front of ``/services/collector/event``. The acknowledgement endpoint is the same
  prefix plus ``/services/collector/ack``. A query string is refused: settings travel in
  FORWARDER_SINK_* variables and the token never rides in a URL.
* Body. One JSON envelope per event, newline separated: ``{"time": <epoch seconds.ms>, "host",
  "source", "sourcetype", "index", "event"}``. ``host`` and ``index`` are left out when not set, so the
  token's defaults apply. A JSON event body is embedded byte for byte; a text (CEF) event becomes a
  JSON string. The body is gzipped when ``settings.gzip``.
* Size. A request holds at most ``max_batch_events`` envelopes and ``max_batch_bytes`` of uncompressed
  body; ``send`` splits a larger batch itself. An event whose envelope alone is over the byte limit, or
  that HEC refuses with 413 when sent alone, is returned as a rejection. On a 413 the request is
  split in halves and each half sent again.
* Failures. 429, 5xx and connection errors are retried with backoff (``Retry-After`` honoured); when
  the attempts run out the SinkError is retryable. Any other refusal raises at once with HEC's
  ``code`` and ``text``.
* Channel. Every request carries ``X-Splunk-Request-Channel`` (a UUID per sink): tokens with
  acknowledgement on refuse requests without one even when the forwarder does not wait for acks.
  With ``HecOptions.ack`` (FORWARDER_HEC_ACK), ``send`` returns only once HEC reports every request
  of the batch indexed.
"""

from __future__ import annotations

import functools
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import SplitResult

import requests

from .. import jsonutil, retry
from ..errors import SinkError
from ..events import Event, Rejection, SendResult
from ..kinds import Flag, Text
from ..urls import check_url, host_port
from ..variables import PER_TENANT, Variable
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, reject_oversized
from .http_post import HttpPoster, describe_reply, header_token, json_object, send_halving, wire_batches
from .settings import HOST, SinkOptions, SinkSettings, option

EVENT_PATH = "/services/collector/event"
ACK_PATH = "/services/collector/ack"
HEALTH_PATH = "/services/collector/health"
_NO_DATA = 5  # HEC's code for an event request with no events: the token was accepted first
_COLLECTOR = "/services/collector"
_ACK_POLL_MAX_SECONDS = 10.0
_TEXT_LIMIT = 200  # characters of a HEC reply quoted in an error
JSON = "application/json"
WHO = "Splunk HEC"


@dataclass(frozen=True)
class HecOptions(SinkOptions):
    index: Optional[str] = option(
        Variable(
            "FORWARDER_HEC_INDEX",
            "Splunk index (empty: the token's default index)",
            Text(),
            tenant=PER_TENANT,
        )
    )  # None: the token's default index
    sourcetype: str = option(
        Variable(
            "FORWARDER_HEC_SOURCETYPE",
            "Splunk sourcetype",
            Text(),
            "emailauth:audit",
        )
    )
    source: str = option(
        Variable(
            "FORWARDER_HEC_SOURCE",
            "Splunk source",
            Text(),
            "emailauth-audit-forwarder",
        )
    )
    host: Optional[str] = option(HOST)
    ack: bool = option(
        Variable(
            "FORWARDER_HEC_ACK",
            "wait for HEC indexer acknowledgement before a batch counts as delivered",
            Flag(),
            "false",
        )
    )  # wait for indexer acknowledgement

    def for_health(self) -> HecOptions:
        """Health events have a sourcetype of their own (``<sourcetype>:health``, its props)."""
        return replace(self, sourcetype=f"{self.sourcetype}:health")


Options = HecOptions


def endpoints(parts: SplitResult) -> Tuple[str, str]:
    """The event and acknowledgement URLs for a ``hec+https://`` URI; ValueError naming FORWARDER_SINK."""
    scheme = parts.scheme.lower()
    if not scheme.startswith("hec+"):
        raise ValueError("FORWARDER_SINK for Splunk HEC must look like hec+https://splunk.example.com:8088")
    http_scheme = scheme[len("hec+") :]
    problem = check_url(f"{http_scheme}://{parts.netloc}{parts.path}", "FORWARDER_SINK")
    if problem:
        raise ValueError(f"{problem}; a Splunk HEC sink looks like hec+https://splunk.example.com:8088")
    if parts.query or parts.fragment:
        raise ValueError(
            "FORWARDER_SINK for Splunk HEC takes no query string (the token goes in FORWARDER_SINK_TOKEN)"
        )
    path = parts.path.rstrip("/")
    if _COLLECTOR in path:
        prefix, event_path = path[: path.index(_COLLECTOR)], path
    else:
        prefix, event_path = path, path + EVENT_PATH
    base = f"{http_scheme}://{parts.netloc}"
    return base + event_path, base + prefix + ACK_PATH


def hec_time(time_us: int) -> bytes:
    """Epoch seconds with exactly three decimals (HEC keeps milliseconds), as a JSON number."""
    ms = time_us // 1000
    seconds, millis = divmod(abs(ms), 1000)
    return f"{'-' if ms < 0 else ''}{seconds}.{millis:03d}".encode("ascii")


def metadata_fields(options: HecOptions) -> bytes:
    """``"host":..,"source":..`` (the set ones, JSON-encoded once per sink) for every envelope."""
    fields = {
        "host": options.host,
        "source": options.source,
        "sourcetype": options.sourcetype,
        "index": options.index,
    }
    return jsonutil.dumps({key: value for key, value in fields.items() if value})[1:-1]


def envelope(event: Event, metadata: bytes) -> bytes:
    # Concatenation, not a dict: the JSON body is embedded as it is, never parsed again.
    body = event.body if event.is_json else jsonutil.dumps(event.body.decode("utf-8"))
    head = b'{"time":' + hec_time(event.time_us) + (b"," + metadata if metadata else b"")
    return head + b',"event":' + body + b"}"


def describe(response: requests.Response) -> str:
    """``HTTP 403, code 4: Invalid token`` from a HEC reply, quoting at most a little of it."""
    summary = f"HTTP {response.status_code}"
    reply = json_object(response)
    if reply is None:
        return describe_reply(response)  # not HEC's JSON (a proxy's page): quote what came back
    code, text = reply.get("code"), str(reply.get("text") or "")[:_TEXT_LIMIT]
    if code is not None:
        summary += f", code {code}" + (f": {text}" if text else "")
    elif text:
        summary += f": {text}"
    if reply.get("invalid-event-number") is not None:
        summary += f" (event {reply['invalid-event-number']} of the request)"
    return summary


def _checked_token(token: Optional[str]) -> str:
    token = (token or "").strip()
    if not token:
        raise ValueError("FORWARDER_SINK_TOKEN is required for a Splunk HEC sink")
    return header_token(token)


class HecSink:
    name = "splunk-hec"

    def __init__(
        self,
        settings: SinkSettings,
        retry_policy: Optional[retry.RetryPolicy] = None,
        ack_timeout_seconds: float = 300.0,
        ack_poll_seconds: float = 1.0,
    ) -> None:
        token = _checked_token(settings.token)
        self.event_url, self.ack_url = endpoints(settings.address)
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        self.max_batch_bytes = settings.batch_bytes or DEFAULT_MAX_BYTES
        self.max_in_flight = 4  # concurrent requests are safe: each batch stands alone
        self.channel = str(uuid.uuid4())
        self._gzip = settings.gzip
        options = settings.options_of(HecOptions)
        self._ack = options.ack
        self._metadata = metadata_fields(options)
        self._ack_timeout = ack_timeout_seconds
        self._ack_poll = ack_poll_seconds
        headers = {"Authorization": f"Splunk {token}", "X-Splunk-Request-Channel": self.channel}
        self._poster = HttpPoster(WHO, settings, headers, [token], retry_policy, describe)

    def __repr__(self) -> str:
        return f"HecSink(url={self.event_url!r}, gzip={self._gzip}, ack={self._ack})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        kept, envelopes, rejected = reject_oversized(
            batch, self._envelope, self.max_batch_bytes, "HEC envelope", "batch limit"
        )
        ack_ids: List[int] = []
        post = functools.partial(self._post_events, ack_ids=ack_ids)
        for events, chunk in wire_batches(kept, envelopes, self.max_batch_events, self.max_batch_bytes):
            rejected += send_halving(events, chunk, post, WHO)
        if ack_ids:
            self._wait_for_acks(ack_ids)
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _envelope(self, event: Event) -> bytes:
        return envelope(event, self._metadata)

    def _post_events(
        self, events: List[Event], envelopes: List[bytes], ack_ids: List[int]
    ) -> Optional[List[Rejection]]:
        """One request: None on 413, else no rejections; with acks on, its ackId goes to ``ack_ids``."""
        response = self._poster.post_batch(self.event_url, b"\n".join(envelopes), JSON)
        if response is None:
            return None
        reply = json_object(response) or {}
        if reply.get("code") != 0 or isinstance(reply.get("code"), bool):
            raise self._poster.unproven(response, 'not HEC\'s success reply {"code": 0}')
        if self._ack:
            ack_ids.append(self._ack_id(reply))
        return []

    @staticmethod
    def _ack_id(reply: Dict[str, Any]) -> int:
        ack_id = reply.get("ackId")
        if isinstance(ack_id, bool) or not isinstance(ack_id, int):
            raise SinkError(
                "Splunk HEC accepted the batch but sent no ackId: indexer acknowledgement is off for "
                "this token; turn it on in Splunk or stop waiting for acks (hec_ack)"
            )
        return ack_id

    def _wait_for_acks(self, ack_ids: List[int]) -> None:
        """Poll the ack endpoint with growing pauses until every id is true, or give up (retryable)."""
        pending = set(ack_ids)
        started = time.monotonic()
        waited = 0.0
        pause = self._ack_poll
        while True:
            pending -= self._acknowledged(pending)
            if not pending:
                return
            # Our own pauses count too, so the bound holds even if sleep returns early.
            elapsed = max(time.monotonic() - started, waited)
            if elapsed >= self._ack_timeout:
                raise SinkError(
                    f"Splunk HEC did not confirm indexing of {len(pending)} request(s) within "
                    f"{self._ack_timeout:g} s (channel {self.channel})",
                    retryable=True,
                )
            step = min(pause, self._ack_timeout - elapsed)
            self._poster.retry.wait(step)
            waited += step
            pause = min(pause * 2, _ACK_POLL_MAX_SECONDS)

    def _acknowledged(self, ack_ids: set[int]) -> set[int]:
        # Sent as it is: the query is a few bytes, not worth gzipping.
        query = jsonutil.dumps({"acks": sorted(ack_ids)})
        response = self._poster.post(self.ack_url, query, JSON, compress=False)
        if not 200 <= response.status_code < 300:
            raise self._poster.refused(response, "the acknowledgement query")
        try:
            statuses = response.json()["acks"]
            return {int(key) for key, done in statuses.items() if done is True}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SinkError("Splunk HEC answered the acknowledgement query with an unreadable body") from exc

    def probe(self) -> str:
        """HEC's health endpoint (no token), then the token: an event request holding no event, which
        HEC answers 400 "No data" (code 5) only once the token is accepted, and 401/403 otherwise (as
        Splunk's HEC status codes and Amazon Data Firehose's own HEC check have it). Nothing is indexed."""
        where = host_port(self.event_url)
        health_url = self.ack_url[: -len(ACK_PATH)] + HEALTH_PATH
        health = self._poster.post(health_url, b"", JSON, compress=False, method="GET")
        if health.status_code in (404, 405, 501):  # a proxy in front that routes the event path only
            healthy = f"no health endpoint at that path (HTTP {health.status_code})"
        elif health.status_code == 200:
            healthy = f"healthy ({describe(health)})"
        else:
            raise self._poster.refused(health, "the health check")
        answer = self._poster.post(self.event_url, b"", JSON, compress=False)
        reply = json_object(answer) or {}
        if answer.status_code == 400 and reply.get("code") == _NO_DATA:
            return (
                f"Splunk HEC at {where}: {healthy}; token accepted (an empty request got {describe(answer)})"
            )
        if answer.status_code in (401, 403):
            raise self._poster.refused(answer, "the token")
        raise self._poster.error(
            f"Splunk HEC at {where} answered a request with no events with {describe(answer)}, not HEC's "
            '400 "No data" (code 5): check that FORWARDER_SINK is a Splunk HEC endpoint'
        )

    def close(self) -> None:
        self._poster.close()


def validate(settings: SinkSettings) -> None:
    endpoints(settings.address)
    _checked_token(settings.token)


open_sink = HecSink
