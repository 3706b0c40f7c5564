"""The HTTP POST the HTTP sinks share (Splunk HEC, HTTP NDJSON, Elasticsearch).

* ``HttpPoster`` retries 408, 429, 5xx and connection errors with backoff (``Retry-After`` honoured)
  and gzips bodies when ``settings.gzip``; a certificate problem is not retried. Every SinkError it
  builds has the sink's secrets replaced, whatever a server or a library echoed.
* ``send_halving`` splits a request refused with 413 in halves; an event refused alone is rejected.
* ``wire_batches`` bounds requests by the size of what goes on the wire rather than of the events.
"""

from __future__ import annotations

import base64
from operator import itemgetter
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import requests

from .. import causes, deadline, http, retry
from ..errors import SinkError
from ..events import Event, Rejection
from ..logs import quoted
from ..urls import host_port
from .base import Bounds, split
from .settings import SinkSettings

NDJSON = "application/x-ndjson"
AUTH_KINDS = ("bearer", "basic", "apikey", "token")
_TEXT_LIMIT = 200  # characters of a reply quoted in an error

# What a refusal of the credentials asks to check.
_STATUS_HINTS = {
    401: "check FORWARDER_SINK_TOKEN",
    403: "check FORWARDER_SINK_TOKEN and what it is allowed to write",
}


def status_hint(status: int) -> str:
    """``; check FORWARDER_SINK_TOKEN ...`` for a refusal of the credentials, else nothing."""
    check = _STATUS_HINTS.get(status)
    return f"; {check}" if check else ""


Describe = Callable[[requests.Response], str]
# Posts one request of ``events`` (``lines`` are their wire form); None means HTTP 413.
PostLines = Callable[[List[Event], List[bytes]], Optional[List[Rejection]]]


def authorization(kind: str, token: str) -> str:
    """The ``Authorization`` value for ``token``; ValueError naming FORWARDER_SINK_TOKEN if unusable."""
    if kind == "basic":
        if ":" not in token:
            raise ValueError("FORWARDER_SINK_TOKEN for basic auth must look like user:password")
        return "Basic " + base64.b64encode(token.encode("utf-8")).decode("ascii")
    prefixes = {"bearer": "Bearer ", "apikey": "ApiKey ", "token": ""}
    if kind not in prefixes:
        raise ValueError(f"sink auth must be one of {', '.join(AUTH_KINDS)} (got {quoted(kind)})")
    return prefixes[kind] + header_token(token)


def header_token(token: str) -> str:
    """``token`` when a header can carry it as it is; ValueError naming FORWARDER_SINK_TOKEN if not."""
    if not all(33 <= ord(char) < 127 for char in token):
        # Caught here because the HTTP library would quote the bad header value in its error.
        raise ValueError("FORWARDER_SINK_TOKEN holds spaces or characters a header cannot carry")
    return token


def json_object(response: requests.Response) -> Optional[Dict[str, Any]]:
    """The reply as a JSON object; None when the body is not one."""
    try:
        reply = response.json()
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def describe_reply(response: requests.Response) -> str:
    """``HTTP 400: <the start of the body>``."""
    text = " ".join(response.text[:_TEXT_LIMIT].split())
    return f"HTTP {response.status_code}" + (f": {text}" if text else "")


class HttpPoster:
    """POSTs for one sink (``who`` names it in errors) on one keep-alive session."""

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
        self.retry = retry_policy or retry.RetryPolicy(attempts=settings.max_attempts)
        self._gzip = settings.gzip
        self._timeout = settings.timeout_seconds
        self._verify = settings.ca_bundle or settings.verify_tls
        self._secrets = [secret for secret in secrets if secret]
        self._describe = describe
        self._session = http.new_session()
        self._session.headers.update(headers)

    def post(
        self,
        url: str,
        body: bytes,
        content_type: str = NDJSON,
        compress: bool = True,
        method: str = "POST",
        headers: Optional[Mapping[str, str]] = None,
    ) -> requests.Response:
        """The first answer not worth retrying; a retryable SinkError once the attempts run out.

        The body is gzipped when the settings ask for it, unless ``compress`` is false. ``method``
        GET or OPTIONS: the probes of ``check``, which send no event. ``headers`` are this request's
        own (an access token that changes while the session lives).
        """
        sent = {**(headers or {}), "Content-Type": content_type}
        if self._gzip and compress:
            import gzip  # here: a run with nothing to send (the common idle run) never loads it

            body = gzip.compress(body, compresslevel=6, mtime=0)
            sent["Content-Encoding"] = "gzip"

        def attempt() -> requests.Response:
            try:
                response = deadline.request(
                    self._session,
                    method,
                    url,
                    data=body,
                    headers=sent,
                    timeout=(min(10.0, self._timeout), self._timeout),
                    deadline_s=self._timeout,
                    verify=self._verify,
                    allow_redirects=False,
                )
            except requests.exceptions.SSLError as exc:  # a certificate problem does not heal by waiting
                raise self.error(self.unreachable(causes.of(exc, where))) from None
            # 501 Not Implemented: the server does not do the method (a probe's OPTIONS), for good.
            if response.status_code in retry.RETRYABLE_STATUS or response.status_code > 501:
                retry_after = retry.parse_retry_after(response.headers.get("Retry-After"))
                raise retry.TryAgain(self._describe(response), retry_after)
            if (
                200 <= response.status_code < 300
                and "html" in response.headers.get("Content-Type", "").lower()
            ):
                # A proxy's or load balancer's page (a login, maintenance): no receiver answers in HTML.
                raise retry.TryAgain(self._unproven_text(response, "a web page, not the receiver's reply"))
            return response

        def give_up(failure: retry.Failure) -> requests.Response:
            if failure.cause is not None:
                message = self.unreachable(failure.cause, failure.attempts)
            else:
                tries = f"still failing after {failure.attempts} attempts"
                message = f"{self.who} at {url} {tries}: {failure.problem}"
            raise self.error(message, retryable=True)

        where = host_port(url)
        return retry.call(self.retry, attempt, give_up, f"{method} to {self.who}", where=where)

    def post_batch(self, url: str, body: bytes, content_type: str = NDJSON) -> Optional[requests.Response]:
        """The 2xx answer to a batch; None on 413 (for ``send_halving``); SinkError for other refusals."""
        response = self.post(url, body, content_type)
        if response.status_code == 413:
            return None
        if not 200 <= response.status_code < 300:
            raise self.refused(response)
        return response

    def unproven(self, response: requests.Response, what: str) -> SinkError:
        """A 2xx that does not prove the batch was stored: nothing counts as delivered (retryable)."""
        return self.error(f"{self.who} {self._unproven_text(response, what)}", retryable=True)

    @staticmethod
    def _unproven_text(response: requests.Response, what: str) -> str:
        kind = response.headers.get("Content-Type") or "no content type"
        return f"answered {describe_reply(response)} ({kind}): {what}; nothing counts as delivered"

    def refused(self, response: requests.Response, what: str = "the batch") -> SinkError:
        return self.error(
            f"{self.who} refused {what}: {self._describe(response)}{status_hint(response.status_code)}"
        )

    def unreachable(self, cause: causes.Cause, attempts: int = 1) -> str:
        return causes.explain(self.who, cause, attempts, "FORWARDER_SINK", "FORWARDER_SINK_CA_BUNDLE")

    def add_secret(self, secret: str) -> None:
        """Mask ``secret`` too in every error built from now on (a token obtained while running)."""
        if secret and secret not in self._secrets:
            self._secrets.append(secret)

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
    pairs = split(zip(events, lines), itemgetter(1), Bounds(max_events, max_bytes))
    return [([event for event, _ in chunk], [line for _, line in chunk]) for chunk in pairs]
