"""Microsoft Sentinel sink: ``sentinel+https://<data collection endpoint host>``, through Azure Monitor's
Logs Ingestion API into a Log Analytics table (``EmailAuthAudit_CL``, see ``sentinel/`` in the repository).

Protocol choices, from the Logs Ingestion API and Microsoft identity platform documentation:

* Address. The URI is the data collection endpoint (DCE, or the rule's own logs ingestion endpoint);
  rows go to ``{endpoint}/dataCollectionRules/{FORWARDER_SENTINEL_RULE_ID}/streams/
  {FORWARDER_SENTINEL_STREAM}?api-version=2023-01-01``. ``sentinel+http://`` is for loopback only.
* Auth. An OAuth 2.0 client-credentials token of the Entra app (FORWARDER_AZURE_TENANT_ID, _CLIENT_ID,
  _CLIENT_SECRET) for the scope ``https://monitor.azure.com//.default``, from
  ``{FORWARDER_AZURE_AUTHORITY}/{tenant}/oauth2/v2.0/token``; kept until shortly before it expires
  (``forwarder.api.token``, shared with the platform API's tokens) and asked again once when the
  ingestion endpoint answers 401. The token and the client secret are masked in every output.
* Rows. One JSON object per event, built by concatenation (the event body is embedded byte for byte):
  ``{"TimeGenerated": <the event's time>, "EventId": <event id>, "Ecs": <the ECS document>}``; the
  rule's transform spreads ``Ecs`` into the table's columns. Log Analytics does not de-duplicate:
  ``EventId`` tells a re-sent row from a new one.
* Body and size. A JSON array (the service stores nothing of a bare object yet answers 204), gzipped
  unless FORWARDER_SINK_GZIP is false (or the rows do not compress), ``Content-Type:
  application/json``. The service refuses a call over 1 MB, compressed or not: a request's array is
  at most ``MAX_REQUEST_BYTES``, and what goes on the wire never more than the array; a row alone
  over it is rejected (quarantine) unsent, a request the service still answers 413 is split in halves.
* Proof. 204 No Content, and only that: any other 2xx proves nothing (retryable). 429 and 5xx are
  retried with backoff, ``Retry-After`` honoured; 401, 403 and 404 name the settings to check.
"""

from __future__ import annotations

import gzip
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple
from urllib.parse import SplitResult, quote, urlencode, urlsplit

import requests

from .. import jsonutil, retry
from ..api.token import TokenProvider, reuse_key
from ..errors import ApiError, SinkError
from ..events import Event, Rejection, SendResult
from ..kinds import Text, Url
from ..logs import clip, quoted, register_secrets
from ..timeutil import format_us
from ..urls import check_url, host_port
from ..variables import Variable
from .base import DEFAULT_MAX_EVENTS, reject_oversized
from .http_post import HttpPoster, describe_reply, json_object, send_halving, wire_batches
from .settings import SinkOptions, SinkSettings, option

API_VERSION = "2023-01-01"
SCOPE = "https://monitor.azure.com//.default"
# The service's limit per call is 1 MB, before and after compression: the decimal reading, under the
# binary one too. The array's brackets are counted here (``Bounds`` counts a separator per row).
MAX_REQUEST_BYTES = 1_000_000
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
WHO = "Azure Monitor (Logs Ingestion API)"
ENTRA = "Microsoft Entra ID"
_SCHEMES = ("sentinel+https", "sentinel+http")
_EXAMPLE = "sentinel+https://my-dce-abcd.eastus-1.ingest.monitor.azure.com"
_CREDENTIALS = "FORWARDER_AZURE_TENANT_ID, FORWARDER_AZURE_CLIENT_ID and FORWARDER_AZURE_CLIENT_SECRET"
_REQUIRED = (
    ("rule_id", "FORWARDER_SENTINEL_RULE_ID", "the data collection rule's immutable id, dcr-..."),
    ("tenant_id", "FORWARDER_AZURE_TENANT_ID", "the Entra tenant (directory) id"),
    ("client_id", "FORWARDER_AZURE_CLIENT_ID", "the Entra app's client (application) id"),
    ("client_secret", "FORWARDER_AZURE_CLIENT_SECRET", "the Entra app's client secret"),
)


@dataclass(frozen=True)
class SentinelOptions(SinkOptions):
    """The rule and stream (Logs Ingestion API), and the Entra app that may write."""

    rule_id: Optional[str] = option(
        Variable(
            "FORWARDER_SENTINEL_RULE_ID",
            "Microsoft Sentinel sink: the data collection rule's immutable id (`dcr-...`)",
            Text(),
        )
    )
    stream: str = option(
        Variable(
            "FORWARDER_SENTINEL_STREAM",
            "Microsoft Sentinel sink: the rule's input stream",
            Text(),
            "Custom-EmailAuthAudit_CL",
        )
    )
    tenant_id: Optional[str] = option(
        Variable(
            "FORWARDER_AZURE_TENANT_ID",
            "Microsoft Sentinel sink: the Entra tenant (directory) id of the app that writes",
            Text(),
        )
    )
    client_id: Optional[str] = option(
        Variable(
            "FORWARDER_AZURE_CLIENT_ID",
            "Microsoft Sentinel sink: the Entra app's client (application) id",
            Text(),
        )
    )
    client_secret: Optional[str] = option(
        Variable(
            "FORWARDER_AZURE_CLIENT_SECRET",
            "Microsoft Sentinel sink: the Entra app's client secret",
            Text(),
            secret=True,
        )
    )
    authority: str = option(
        Variable(
            "FORWARDER_AZURE_AUTHORITY",
            "Microsoft Sentinel sink: the Entra ID authority the token comes from (another cloud's, e.g. "
            "`https://login.microsoftonline.us`; plain `http://` only for loopback hosts)",
            Url(),
            "https://login.microsoftonline.com",
        )
    )


Options = SentinelOptions


def endpoint(parts: SplitResult) -> str:
    """The data collection endpoint's base URL for a ``sentinel+https://`` URI; ValueError naming
    FORWARDER_SINK."""
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValueError(f"FORWARDER_SINK for Microsoft Sentinel must look like {_EXAMPLE}")
    http_scheme = scheme[len("sentinel+") :]
    base = f"{http_scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    problem = check_url(base, "FORWARDER_SINK")
    if problem:
        raise ValueError(f"{problem}; a Microsoft Sentinel sink looks like {_EXAMPLE}")
    if parts.query or parts.fragment:
        raise ValueError(
            "FORWARDER_SINK for Microsoft Sentinel takes no query string (the rule and stream go in "
            "FORWARDER_SENTINEL_RULE_ID and FORWARDER_SENTINEL_STREAM)"
        )
    return base


def upload_url(settings: SinkSettings) -> str:
    options = settings.options_of(SentinelOptions)
    rule = quote(options.rule_id or "", safe="")
    stream = quote(options.stream, safe="")
    return (
        f"{endpoint(settings.address)}/dataCollectionRules/{rule}/streams/{stream}?api-version={API_VERSION}"
    )


def token_url(settings: SinkSettings) -> str:
    """The tenant's token endpoint at FORWARDER_AZURE_AUTHORITY; ValueError naming it."""
    options = settings.options_of(SentinelOptions)
    authority = options.authority.rstrip("/")
    problem = check_url(authority, "FORWARDER_AZURE_AUTHORITY")
    if problem:
        raise ValueError(problem)
    if urlsplit(authority).query:
        raise ValueError("FORWARDER_AZURE_AUTHORITY takes no query string")
    return f"{authority}/{quote(options.tenant_id or '', safe='')}/oauth2/v2.0/token"


def _checked(settings: SinkSettings) -> None:
    """Every setting the sink needs, each problem naming its variable."""
    options = settings.options_of(SentinelOptions)
    problems = [
        f"{name}: required for a Microsoft Sentinel sink ({what})"
        for key, name, what in _REQUIRED
        if not (getattr(options, key) or "").strip()
    ]
    if not options.stream.startswith("Custom-"):
        problems.append(
            "FORWARDER_SENTINEL_STREAM: a custom table's stream is named Custom-<name> "
            f"(got {quoted(options.stream)})"
        )
    if problems:
        raise ValueError("; ".join(problems))


def row(event: Event) -> bytes:
    """The row of one (ECS) event: its time, its id and the event itself, embedded as it is."""
    head = b'{"TimeGenerated":"' + format_us(event.time_us).encode("ascii") + b'","EventId":'
    return head + jsonutil.dumps(event.id) + b',"Ecs":' + event.body + b"}"


def _describe(response: requests.Response) -> str:
    """``HTTP 403: <error code>: <message>`` from an Azure error reply (``{"error": {...}}``)."""
    reply = json_object(response) or {}
    error = reply.get("error")
    if isinstance(error, dict):
        text = " ".join(f"{error.get('code') or ''}: {error.get('message') or ''}".split())
        return f"HTTP {response.status_code}: {clip(text)}"
    return describe_reply(response)


def _describe_entra(response: requests.Response) -> str:
    """``HTTP 401: invalid_client: AADSTS7000215: ...`` from an OAuth error reply."""
    reply = json_object(response) or {}
    if isinstance(reply.get("error"), str):
        text = " ".join(f"{reply['error']}: {reply.get('error_description') or ''}".split())
        return f"HTTP {response.status_code}: {clip(text)}"
    return describe_reply(response)


# What a refusal of an upload asks to check, by status.
_UPLOAD_HINTS = {
    401: f"the token was refused: check {_CREDENTIALS}, and FORWARDER_AZURE_AUTHORITY",
    403: (
        "the app may not write to this rule: give FORWARDER_AZURE_CLIENT_ID's service principal the "
        "Monitoring Metrics Publisher role on the data collection rule (sentinel/azuredeploy.json does)"
    ),
    404: "check FORWARDER_SENTINEL_RULE_ID (the immutable id), FORWARDER_SENTINEL_STREAM and FORWARDER_SINK",
}


class SentinelSink:
    name = "microsoft-sentinel"

    def __init__(
        self,
        settings: SinkSettings,
        retry_policy: Optional[retry.RetryPolicy] = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        _checked(settings)
        self.url = upload_url(settings)
        self._token_url = token_url(settings)
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        # FORWARDER_BATCH_BYTES may lower the limit, never raise it past what the service takes.
        self.max_batch_bytes = min(settings.batch_bytes or MAX_REQUEST_BYTES, MAX_REQUEST_BYTES)
        self.max_in_flight = 4  # each request stands alone
        self._gzip = settings.gzip
        options = settings.options_of(SentinelOptions)
        secret = options.client_secret or ""
        self._form = urlencode(
            {
                "grant_type": "client_credentials",
                "client_id": options.client_id or "",
                "client_secret": secret,
                "scope": SCOPE,
            }
        ).encode("ascii")
        self._poster = HttpPoster(WHO, settings, {}, [secret], retry_policy, _describe)
        self._entra = HttpPoster(ENTRA, settings, {}, [secret], retry_policy, _describe_entra)
        key = reuse_key("sentinel", self._token_url, options.client_id or "", secret)
        self._tokens = TokenProvider(self._fetch_token, clock, key, f"{ENTRA} at {self._token_url}")
        register_secrets([secret])  # whatever a library logs of the token request

    def __repr__(self) -> str:
        return f"SentinelSink(url={self.url!r}, gzip={self._gzip})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        # 2: the array's brackets around a row sent alone.
        kept, rows, rejected = reject_oversized(
            batch, row, self.max_batch_bytes - 2, "row", "Logs Ingestion API request limit"
        )
        for events, chunk in wire_batches(kept, rows, self.max_batch_events, self.max_batch_bytes - 1):
            rejected += send_halving(events, chunk, self._upload, WHO)
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _upload(self, events: List[Event], rows: List[bytes]) -> Optional[List[Rejection]]:
        """One request: None when the service answers 413, else no rejections once it answered 204."""
        response = self._post_rows(*self._encoded(b"[" + b",".join(rows) + b"]"))
        if response.status_code == 413:
            return None
        if response.status_code != 204:
            if 200 <= response.status_code < 300:
                raise self._poster.unproven(response, "not the service's 204 No Content")
            raise self._refused(response, "the batch")
        return []

    def _encoded(self, array: bytes) -> Tuple[bytes, Dict[str, str]]:
        """The body as it goes on the wire, and its headers: gzipped unless FORWARDER_SINK_GZIP is false
        or gzip would make it larger (rows that do not compress), so it is never over the limit the
        array was built within."""
        if self._gzip:
            compressed = gzip.compress(array, compresslevel=6, mtime=0)
            if len(compressed) < len(array):
                return compressed, {"Content-Encoding": "gzip"}
        return array, {}

    def _post_rows(self, body: bytes, headers: Dict[str, str]) -> requests.Response:
        """POST ``body`` with the current token, once more with a new one on 401."""
        token = self._token()
        response = self._post(body, headers, token)
        if response.status_code == 401:  # revoked or expired early: one new token, one more try
            response = self._post(body, headers, self._token(rejected=token))
        return response

    def _post(self, body: bytes, headers: Dict[str, str], token: str) -> requests.Response:
        auth = {**headers, "Authorization": f"Bearer {token}"}
        return self._poster.post(self.url, body, JSON, compress=False, headers=auth)

    def _token(self, rejected: Optional[str] = None) -> str:
        try:
            return self._tokens.refresh(rejected) if rejected else self._tokens.get()
        except ApiError as exc:  # a token reply without a usable token
            raise self._entra.error(f"{exc}; check FORWARDER_AZURE_AUTHORITY", retryable=True) from None

    def _fetch_token(self) -> Any:
        """The token endpoint's JSON reply (``forwarder.api.token`` reads the token and its lifetime)."""
        response = self._entra.post(self._token_url, self._form, FORM, compress=False)
        if response.status_code != 200:
            described = _describe_entra(response)
            raise self._entra.error(
                f"{ENTRA} refused the client credentials: {described}; check {_CREDENTIALS}, and "
                "FORWARDER_AZURE_AUTHORITY"
            )
        reply = json_object(response)
        if reply is None:
            raise self._entra.unproven(response, "not a JSON token reply")
        return reply

    def _refused(self, response: requests.Response, what: str) -> SinkError:
        hint = _UPLOAD_HINTS.get(response.status_code)
        return self._poster.error(
            f"{WHO} refused {what}: {_describe(response)}" + (f"; {hint}" if hint else "")
        )

    def probe(self) -> str:
        """A token from Entra ID, then an upload of an empty array: the service checks the token, the
        rule, the stream and the app's right to write to them, and stores nothing."""
        where = host_port(self.url)
        self._token()
        response = self._post_rows(*self._encoded(b"[]"))
        if response.status_code != 204:
            raise self._refused(response, "an empty upload")
        rule_and_stream = self.url.split("/dataCollectionRules/", 1)[1].split("?", 1)[0]
        return (
            f"Microsoft Sentinel at {where}: token from {ENTRA} ({host_port(self._token_url)}); "
            f"an upload of no rows to {rule_and_stream} got HTTP 204"
        )

    def close(self) -> None:
        self._poster.close()
        self._entra.close()


def format_problem(event_format: str, settings: SinkSettings) -> Optional[str]:
    """The table's columns come from ECS documents (the rule's transform reads them)."""
    if event_format == "ecs":
        return None
    return (
        f"the Microsoft Sentinel table EmailAuthAudit_CL is built from ECS documents, not "
        f"{event_format!r}; use ecs with a Microsoft Sentinel sink"
    )


def validate(settings: SinkSettings) -> None:
    SentinelSink(settings).close()  # checks the URLs and the settings; opens no connection


open_sink = SentinelSink
