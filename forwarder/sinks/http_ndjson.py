"""HTTP NDJSON sink: ``https://collector.example.com/path`` (``http://`` for loopback only).

For the collectors that take newline-delimited JSON over a POST: Sumo Logic HTTP sources, Cribl's
HTTP source, Logstash's ``http`` input, Vector, Fluent Bit.

* Body. One event per line, each line ending in ``\\n``; a JSON event is sent byte for byte, a text
  (CEF) event as its line. ``Content-Type: application/x-ndjson``; gzipped when ``settings.gzip``.
* Auth. ``FORWARDER_SINK_TOKEN`` goes in ``Authorization``: ``Bearer <token>`` by default;
  ``settings.auth`` picks ``basic`` (the token is ``user:password``), ``apikey`` (``ApiKey <token>``) or
  ``token`` (the header is the token as it is, as Cribl expects). No token: no ``Authorization``.
  ``settings.headers`` adds fixed headers (``X-Sumo-Category``...); they are never logged.
* Size and failures as for Splunk HEC: requests bounded by ``max_batch_events``/``max_batch_bytes``;
  413 splits a request in halves, and an event refused alone with 413 becomes a rejection; 408, 429,
  5xx and connection errors are retried with backoff (``Retry-After`` honoured), other refusals raise.

The retrying, redacting POST (``HttpPoster``) and the 413 halving (``send_halving``) are shared with
the Elasticsearch sink.
"""

from __future__ import annotations

import base64
import gzip
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import urlsplit

import requests

from .. import retry
from ..errors import SinkError
from ..events import Event, Rejection, SendResult
from ..http import check_url, new_session
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, batches
from .settings import SinkSettings

NDJSON = "application/x-ndjson"
AUTH_KINDS = ("bearer", "basic", "apikey", "token")
_TEXT_LIMIT = 200  # characters of a reply quoted in an error
_TRANSIENT = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)

Describe = Callable[[requests.Response], str]
# Posts one request of ``events`` (``lines`` are their wire form); None means HTTP 413.
PostLines = Callable[[List[Event], List[bytes]], Optional[List[Rejection]]]


def authorization(kind: str, token: str) -> str:
    """The ``Authorization`` value for ``token``; ValueError naming FORWARDER_SINK_TOKEN if unusable."""
    if kind == "basic":
        if ":" not in token:
            raise ValueError("FORWARDER_SINK_TOKEN for basic auth must look like user:password")
        return "Basic " + base64.b64encode(token.encode("utf-8")).decode("ascii")
    if not all(33 <= ord(char) < 127 for char in token):
        # Caught here because the HTTP library would quote the bad header value in its error.
        raise ValueError("FORWARDER_SINK_TOKEN holds spaces or characters a header cannot carry")
    prefixes = {"bearer": "Bearer ", "apikey": "ApiKey ", "token": ""}
    if kind not in prefixes:
        raise ValueError(f"sink auth must be one of {', '.join(AUTH_KINDS)} (got {kind!r})")
    return prefixes[kind] + token


def parse_headers(text: str) -> Dict[str, str]:
    """``Name: value; Other: value`` (FORWARDER_SINK_HEADERS) into a dict; ValueError on a bad pair."""
    headers: Dict[str, str] = {}
    for part in filter(None, (item.strip() for item in text.split(";"))):
        name, sep, value = part.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or not all(33 <= ord(c) < 127 and c != ":" for c in name):
            raise ValueError(f"expected 'Name: value' pairs separated by ';' (got {name or part!r})")
        if not all(32 <= ord(c) < 127 for c in value):
            raise ValueError(f"the value of header {name} holds characters a header cannot carry")
        headers[name] = value
    return headers


def describe_reply(response: requests.Response) -> str:
    """``HTTP 400: <the start of the body>``."""
    text = " ".join(response.text[:_TEXT_LIMIT].split())
    return f"HTTP {response.status_code}" + (f": {text}" if text else "")


class HttpPoster:
    """POSTs bodies (gzipped when asked) with retries on 408/429/5xx and connection errors.

    Every SinkError it builds has the secrets replaced, whatever a server or a library echoed.
    """

    def __init__(
        self,
        who: str,
        settings: SinkSettings,
        headers: Mapping[str, str],
        secrets: Sequence[str],
        retry_policy: Optional[retry.RetryPolicy] = None,
        describe: Describe = describe_reply,
    ) -> None:
        self.who = who
        self.retry = retry_policy or retry.RetryPolicy()
        self._gzip = settings.gzip
        self._timeout = settings.timeout_seconds
        self._verify = settings.ca_bundle or settings.verify_tls
        self._secrets = [secret for secret in secrets if secret]
        self._describe = describe
        self._session = new_session()
        self._session.headers.update(headers)

    def post(self, url: str, body: bytes, content_type: str = NDJSON) -> requests.Response:
        """The first answer not worth retrying; a retryable SinkError once the attempts run out."""
        headers = {"Content-Type": content_type}
        if self._gzip:
            body = gzip.compress(body, compresslevel=6, mtime=0)
            headers["Content-Encoding"] = "gzip"
        attempt = 0
        while True:
            attempt += 1
            retry_after: Optional[float] = None
            try:
                response = self._session.post(
                    url,
                    data=body,
                    headers=headers,
                    timeout=self._timeout,
                    verify=self._verify,
                    allow_redirects=False,
                )
            except requests.exceptions.SSLError as exc:  # a certificate problem does not heal by waiting
                raise self.error(f"TLS with {self.who} at {url} failed: {exc}") from exc
            except _TRANSIENT as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code not in retry.RETRYABLE_STATUS and response.status_code < 500:
                    return response
                problem = self._describe(response)
                retry_after = retry.parse_retry_after(response.headers.get("Retry-After"))
            if attempt >= self.retry.attempts:
                message = f"{self.who} at {url} still failing after {attempt} attempts: {problem}"
                raise self.error(message, retryable=True)
            retry.sleep(self.retry.delay(attempt, retry_after))

    def refused(self, response: requests.Response, what: str = "the batch") -> SinkError:
        return self.error(f"{self.who} refused {what}: {self._describe(response)}")

    def error(self, message: str, retryable: bool = False) -> SinkError:
        for secret in self._secrets:
            message = message.replace(secret, "<redacted>")
        return SinkError(message, retryable=retryable)

    def close(self) -> None:
        self._session.close()


def send_halving(events: List[Event], lines: List[bytes], post: PostLines, who: str) -> List[Rejection]:
    """Post ``events``; on 413 post each half on its own, and reject an event refused alone."""
    rejected = post(events, lines)
    if rejected is not None:
        return rejected
    if len(events) == 1:
        return [Rejection(events[0], f"{who} refused it as too large (HTTP 413, {len(lines[0])} bytes)")]
    half = len(events) // 2
    return send_halving(events[:half], lines[:half], post, who) + send_halving(
        events[half:], lines[half:], post, who
    )


def wire_batches(
    events: Sequence[Event], lines: Sequence[bytes], max_events: int, max_bytes: int
) -> List[Tuple[List[Event], List[bytes]]]:
    """Requests of (events, wire lines), bounded by the wire size rather than the event size."""
    wrapped = [Event(str(i), event.time_us, line) for i, (event, line) in enumerate(zip(events, lines))]
    return [
        ([events[int(item.id)] for item in chunk], [item.body for item in chunk])
        for chunk in batches(wrapped, max_events, max_bytes)
    ]


class HttpNdjsonSink:
    name = "http-ndjson"

    def __init__(self, settings: SinkSettings, retry_policy: Optional[retry.RetryPolicy] = None) -> None:
        problem = check_url(settings.uri, "FORWARDER_SINK")
        if problem:
            raise ValueError(f"{problem}; an HTTP NDJSON sink looks like https://collector.example.com/path")
        self.url = settings.uri
        self._gzip = settings.gzip
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        self.max_batch_bytes = settings.batch_bytes or DEFAULT_MAX_BYTES
        headers = dict(settings.headers)
        token = (settings.token or "").strip()
        if token:
            headers["Authorization"] = authorization(settings.auth or "bearer", token)
        secrets = [token, headers.get("Authorization", ""), *settings.headers.values()]
        self._poster = HttpPoster("the HTTP collector", settings, headers, secrets, retry_policy)

    def __repr__(self) -> str:
        # The path may hold a collector's secret (Sumo Logic URLs do): show the host only.
        return f"HttpNdjsonSink(host={urlsplit(self.url).netloc!r}, gzip={self._gzip})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        lines = [event.body + b"\n" for event in batch]
        rejected: List[Rejection] = []
        for events, chunk in wire_batches(batch, lines, self.max_batch_events, self.max_batch_bytes):
            rejected += send_halving(events, chunk, self._post, "the HTTP collector")
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _post(self, events: List[Event], lines: List[bytes]) -> Optional[List[Rejection]]:
        response = self._poster.post(self.url, b"".join(lines))
        if response.status_code == 413:
            return None
        if not 200 <= response.status_code < 300:
            raise self._poster.refused(response)
        return []

    def close(self) -> None:
        self._poster.close()


def open_http_ndjson(settings: SinkSettings) -> HttpNdjsonSink:
    return HttpNdjsonSink(settings)
