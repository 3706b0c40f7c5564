"""HTTP collector sink: ``https://collector.example.com/path`` (``http://`` for loopback only).

For the collectors that take JSON events over a POST: Sumo Logic HTTP sources, Cribl's HTTP source,
Logstash's ``http`` input, Vector, Fluent Bit's HTTP input.

* Body (``HttpOptions.body``, FORWARDER_HTTP_BODY). ``ndjson``: one event per line, each line
  ending in ``\\n``; a JSON event is sent byte for byte, a text (CEF) event as its line;
  ``Content-Type: application/x-ndjson``. ``json-array``: one JSON array of the events, byte for byte,
  ``Content-Type: application/json``, for collectors that take JSON only (Fluent Bit answers anything
  else with 400 "invalid 'Content-Type'"); a text event cannot be an element, so it is rejected
  (configuration refuses ``FORWARDER_FORMAT=cef`` with it). A ``Content-Type`` in ``settings.headers``
  (FORWARDER_SINK_HEADERS) replaces the default. Gzipped when ``settings.gzip``.
* Auth. ``FORWARDER_SINK_TOKEN`` goes in ``Authorization``: ``Bearer <token>`` by default;
  ``settings.auth`` picks ``basic`` (the token is ``user:password``), ``apikey`` (``ApiKey <token>``) or
  ``token`` (the header is the token as it is, as Cribl expects). No token: no ``Authorization``.
  ``settings.headers`` adds fixed headers (``X-Sumo-Category``...); they are never logged.
* Proof of acceptance: a 2xx that is not a web page (a proxy's); with ``HttpOptions.accept_body`` (a
  regular expression) the reply must also match it, for collectors that answer 200 before storing.
* Size and failures as for Splunk HEC: requests bounded by ``max_batch_events``/``max_batch_bytes``;
  413 splits a request in halves, and an event refused alone with 413 becomes a rejection; 408, 429,
  5xx and connection errors are retried with backoff (``Retry-After`` honoured), other refusals raise.

The retrying, redacting POST and the 413 halving come from ``http_post``, as for HEC and Elasticsearch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence
from urllib.parse import urlsplit

from .. import retry
from ..events import Event, Rejection, SendResult
from ..kinds import Choice, Text
from ..urls import check_url, host_port
from ..variables import Variable
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, ndjson_line
from .http_post import NDJSON, HttpPoster, authorization, send_halving, wire_batches
from .settings import SinkOptions, SinkSettings, option

WHO = "the HTTP collector"
JSON_ARRAY = "json-array"
_NOT_AN_ELEMENT = "a text event cannot be an element of a JSON array (FORWARDER_HTTP_BODY=json-array)"


@dataclass(frozen=True)
class HttpOptions(SinkOptions):
    body: str = option(
        Variable(
            "FORWARDER_HTTP_BODY",
            "HTTP collector sink: the request body, `ndjson` (one event per line, `application/x-ndjson`) or "
            "`json-array` (one JSON array of the events, `application/json`: Fluent Bit's HTTP input and "
            "other collectors that take JSON only; not with `FORWARDER_FORMAT=cef`); "
            "`FORWARDER_SINK_HEADERS` may set another `Content-Type`",
            Choice(("ndjson", "json-array")),
            "ndjson",
        )
    )  # "ndjson" or "json-array"
    accept_body: Optional[str] = option(
        Variable(
            "FORWARDER_SINK_ACCEPT_BODY",
            "HTTP collector sink: a regular expression its 2xx reply must match for a batch to count as "
            'delivered (e.g. `"accepted"`); empty: any 2xx that is not a web page',
            Text(shown="regular expression"),
        )
    )  # a regex a 2xx reply must match


Options = HttpOptions


def content_type(settings: SinkSettings) -> str:
    """The configured ``Content-Type`` header (FORWARDER_SINK_HEADERS), else the body kind's own."""
    chosen = [value for name, value in settings.headers.items() if name.lower() == "content-type"]
    if chosen:
        return chosen[-1]
    return "application/json" if settings.options_of(HttpOptions).body == JSON_ARRAY else NDJSON


def json_array(elements: List[bytes]) -> bytes:
    return b"[" + b",".join(elements) + b"]"


class HttpNdjsonSink:
    name = "http-ndjson"

    def __init__(self, settings: SinkSettings, retry_policy: Optional[retry.RetryPolicy] = None) -> None:
        problem = check_url(settings.uri, "FORWARDER_SINK")
        if problem:
            raise ValueError(f"{problem}; an HTTP NDJSON sink looks like https://collector.example.com/path")
        self.url = settings.uri
        options = settings.options_of(HttpOptions)
        try:
            self._accept = re.compile(options.accept_body) if options.accept_body else None
        except re.error as exc:
            raise ValueError(f"FORWARDER_SINK_ACCEPT_BODY is not a regular expression: {exc}") from None
        self._gzip = settings.gzip
        self._array = options.body == JSON_ARRAY
        self._content_type = content_type(settings)
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        self.max_batch_bytes = settings.batch_bytes or DEFAULT_MAX_BYTES
        self.max_in_flight = 4  # concurrent requests are safe: each batch stands alone
        headers = {name: value for name, value in settings.headers.items() if name.lower() != "content-type"}
        token = (settings.token or "").strip()
        if token:
            headers["Authorization"] = authorization(settings.auth or "bearer", token)
        secrets = [token, *headers.values()]  # the Authorization and every configured header but the type
        self._poster = HttpPoster(WHO, settings, headers, secrets, retry_policy)

    def __repr__(self) -> str:
        # The path may hold a collector's secret (Sumo Logic URLs do): show the host only.
        return f"HttpNdjsonSink(host={urlsplit(self.url).netloc!r}, gzip={self._gzip})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        if self._array:
            sent = [event for event in batch if event.is_json]
            parts = [event.body for event in sent]
        else:
            sent, parts = list(batch), [ndjson_line(event) for event in batch]
        rejected = [Rejection(event, _NOT_AN_ELEMENT) for event in batch if self._array and not event.is_json]
        # An array's brackets are one byte more than the separators a batch's bound counts.
        max_bytes = self.max_batch_bytes - (1 if self._array else 0)
        for events, chunk in wire_batches(sent, parts, self.max_batch_events, max_bytes):
            rejected += send_halving(events, chunk, self._post, WHO)
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _post(self, events: List[Event], parts: List[bytes]) -> Optional[List[Rejection]]:
        body = json_array(parts) if self._array else b"".join(parts)
        response = self._poster.post_batch(self.url, body, self._content_type)
        if response is None:
            return None
        if self._accept is not None and not self._accept.search(response.text):
            raise self._poster.unproven(response, f"the reply does not match {self._accept.pattern!r}")
        return []

    def probe(self) -> str:
        """OPTIONS on the collector's URL: it proves the address, the TLS and that something answers
        there, and no collector stores anything for it (an empty POST might become an empty record).
        A 401/403 is a refused token; any other answer does not prove the token: the first batch does."""
        answer = self._poster.post(self.url, b"", self._content_type, compress=False, method="OPTIONS")
        if answer.status_code in (401, 403):
            raise self._poster.refused(answer, "the credentials")
        return (
            f"HTTP collector at {host_port(self.url)} answered OPTIONS with HTTP {answer.status_code} "
            "(reachable; the token is first proven by a batch)"
        )

    def close(self) -> None:
        self._poster.close()


def format_problem(event_format: str, settings: SinkSettings) -> Optional[str]:
    """A JSON array holds JSON events only: CEF lines are text."""
    if settings.options_of(HttpOptions).body == JSON_ARRAY and event_format == "cef":
        return "cef events are text lines, which FORWARDER_HTTP_BODY=json-array cannot carry; use ndjson"
    return None


def validate(settings: SinkSettings) -> None:
    HttpNdjsonSink(settings).close()  # checks the URL and the token; opens no connection


open_sink = HttpNdjsonSink
