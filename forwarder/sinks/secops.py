"""Google SecOps (Chronicle) sink: ``secops+https://chronicle.<region>.rep.googleapis.com`` (the
instance's regional endpoint; ``secops+http://`` for loopback only), UDM events into the Chronicle
API's ``events:import``.

Protocol choices, from the Chronicle API reference (``projects.locations.instances.events.import``):

* Why UDM events and not raw logs: the events are normalized already (``FORWARDER_FORMAT=udm``,
  ``normalize/udm.py``), so they are searchable and seen by YARA-L rules (the compiled Sigma rules in
  ``secops/``) as they arrive; raw logs would need a custom log type and a parser each customer
  writes and maintains in their instance before anything is usable.
* Target. ``{endpoint}/v1/projects/{FORWARDER_SECOPS_PROJECT}/locations/{FORWARDER_SECOPS_REGION}/
  instances/{FORWARDER_SECOPS_INSTANCE}/events:import``; the body ``{"inlineSource": {"events":
  [{"udm": <event>}, ...]}}``, JSON, not compressed; 200 with an empty body (as documented) or a JSON
  object is the proof of acceptance (anything else 2xx proves nothing: retried).
* Auth. The service account's JSON key (``FORWARDER_SECOPS_CREDENTIALS``: a path, or Secrets
  Manager / SSM) gives access tokens (``google_auth.py``), cached until shortly before expiry; a 401
  drops the token and the request goes once more with a new one. The account needs
  ``chronicle.events.import`` on the instance (and ``chronicle.instances.get`` for ``check``).
* Size. A request's body is at most ``REQUEST_LIMIT`` bytes (the API's 1 MB per request):
  ``max_batch_bytes`` is capped so that the envelopes and the wrapper fit; an event whose envelope
  alone is over it is rejected without being sent.
* Refusals. The import is all or nothing: one invalid event fails the request with 400
  INVALID_ARGUMENT. Such a request is split in halves and each sent again, down to the event that
  is refused alone, which is rejected (quarantine) with the service's message; 413 is split alike.
  Other 4xx (403, 404) raise: they are not an event's fault. 429 (burst limits), 5xx and connection
  errors are retried on the project's HTTP path (``http_post.HttpPoster``: backoff, ``Retry-After``,
  one deadline); when the attempts run out the SinkError is retryable.
* Copies. The service does not de-duplicate: every event carries its id in
  ``metadata.product_log_id``, and the delivered-ids index keeps a crash from sending twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence
from urllib.parse import SplitResult, quote

import requests

from .. import retry
from ..errors import SinkError
from ..events import Event, Rejection, SendResult
from ..kinds import Text
from ..logs import quoted
from ..urls import check_url, host_port
from ..variables import PER_TENANT, Variable
from . import google_auth
from .base import DEFAULT_MAX_EVENTS, probed, reject_oversized
from .http_post import HttpPoster, describe_reply, json_object, wire_batches
from .settings import SinkOptions, SinkSettings, option

WHO = "Google SecOps"
JSON = "application/json"
API_VERSION = "v1"
REQUEST_LIMIT = 1_000_000  # bytes of request body the import takes
DEFAULT_MAX_BYTES = 900_000
_HEAD = b'{"inlineSource":{"events":['
_TAIL = b"]}}"
_UDM_HEAD, _UDM_TAIL = b'{"udm":', b"}"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class SecOpsOptions(SinkOptions):
    project: Optional[str] = option(
        Variable(
            "FORWARDER_SECOPS_PROJECT",
            "Google SecOps sink: the Google Cloud project the instance is bound to",
            Text(),
        )
    )
    region: Optional[str] = option(
        Variable(
            "FORWARDER_SECOPS_REGION",
            "Google SecOps sink: the instance's location (`us`, `europe`, `europe-west2`, ...), as in its "
            "regional endpoint",
            Text(),
        )
    )
    instance: Optional[str] = option(
        Variable(
            "FORWARDER_SECOPS_INSTANCE",
            "Google SecOps sink: the instance (customer) id, a UUID (SIEM Settings → Profile)",
            Text(),
            tenant=PER_TENANT,
        )
    )
    # the service account's key: a path or a secretsmanager:/ssm: reference, not the key itself
    credentials: Optional[str] = option(
        Variable(
            "FORWARDER_SECOPS_CREDENTIALS",
            "Google SecOps sink: the service account's JSON key, as a file path or `secretsmanager:<id>` / "
            "`ssm:<name>` holding it (the key is masked everywhere; the path is not a secret)",
            Text(shown="path or reference"),
            tenant=PER_TENANT,
        )
    )


Options = SecOpsOptions


def _checked(value: Optional[str], variable: str, example: str) -> str:
    value = (value or "").strip()
    if not value:
        raise ValueError(f"{variable} is required for a Google SecOps sink (e.g. {example})")
    if not _ID.match(value):
        raise ValueError(f"{variable} {quoted(value)} is not valid (e.g. {example})")
    return value


def instance_path(settings: SinkSettings) -> str:
    """``projects/…/locations/…/instances/…``; ValueError naming the variable that is missing."""
    options = settings.options_of(SecOpsOptions)
    project = _checked(options.project, "FORWARDER_SECOPS_PROJECT", "my-secops-project")
    region = _checked(options.region, "FORWARDER_SECOPS_REGION", "us or europe-west2")
    instance = _checked(
        options.instance,
        "FORWARDER_SECOPS_INSTANCE",
        "the customer id, a UUID in SIEM Settings > Profile",
    )
    return f"projects/{quote(project)}/locations/{quote(region)}/instances/{quote(instance)}"


def endpoint(parts: SplitResult) -> str:
    """The HTTP base URL of a ``secops+https://`` URI; ValueError naming FORWARDER_SINK."""
    scheme = parts.scheme.lower()
    example = "secops+https://chronicle.us.rep.googleapis.com"
    if not scheme.startswith("secops+"):
        raise ValueError(f"FORWARDER_SINK for Google SecOps must look like {example}")
    http_scheme = scheme[len("secops+") :]
    base = f"{http_scheme}://{parts.netloc}"
    problem = check_url(base + parts.path, "FORWARDER_SINK")
    if problem:
        raise ValueError(f"{problem}; a Google SecOps sink looks like {example}")
    if parts.path.strip("/") or parts.query or parts.fragment:
        raise ValueError(
            f"FORWARDER_SINK for Google SecOps is the regional endpoint alone, no path or query ({example}); "
            "the project, region and instance have their own FORWARDER_SECOPS_* variables"
        )
    return base


def envelope(event: Event) -> bytes:
    """``{"udm": <event>}``: the UDM body embedded as it is."""
    return _UDM_HEAD + event.body + _UDM_TAIL


def request_body(envelopes: Sequence[bytes]) -> bytes:
    return _HEAD + b",".join(envelopes) + _TAIL


def google_error(response: requests.Response) -> str:
    """``HTTP 400 INVALID_ARGUMENT: <message>`` from Google's error reply, quoting a little of it."""
    reply = json_object(response)
    error = reply.get("error") if reply else None
    if not isinstance(error, dict):
        return describe_reply(response)
    status = error.get("status")
    message = " ".join(str(error.get("message") or "").split())[:_MESSAGE_LIMIT]
    return (
        f"HTTP {response.status_code}"
        + (f" {status}" if status else "")
        + (f": {message}" if message else "")
    )


class SecOpsSink:
    name = "google-secops"

    def __init__(self, settings: SinkSettings, retry_policy: Optional[retry.RetryPolicy] = None) -> None:
        base = endpoint(settings.address)
        self.instance = instance_path(settings)
        self.instance_url = f"{base}/{API_VERSION}/{self.instance}"
        self.import_url = f"{self.instance_url}/events:import"
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        # the wrapper and one comma per envelope (counted by the bounds as a separator) fit the limit
        self.max_batch_bytes = min(
            settings.batch_bytes or DEFAULT_MAX_BYTES, REQUEST_LIMIT - len(_HEAD + _TAIL)
        )
        self.max_in_flight = 4  # each request stands alone; the token is shared
        problem = google_auth.signing_problem()
        if problem:
            raise ValueError(problem)
        key = google_auth.load_key(settings.options_of(SecOpsOptions).credentials, settings.timeout_seconds)
        secrets = google_auth.key_secrets("", key.private_key)[1:]
        self._poster = HttpPoster(WHO, settings, {}, secrets, retry_policy, google_error)
        self._tokens = google_auth.AccessTokens(key, self._post_form, self._poster.add_secret)

    def __repr__(self) -> str:
        return f"SecOpsSink(url={self.import_url!r}, account={self._tokens.key.client_email!r})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        # a text event (CEF, replayed from another sink's quarantine) is no UDM: refused unsent
        rejected = [
            Rejection(e, f"{WHO} imports UDM events: this event is not JSON") for e in batch if not e.is_json
        ]
        kept, envelopes, too_large = reject_oversized(
            [e for e in batch if e.is_json], envelope, self.max_batch_bytes, "UDM envelope", "request limit"
        )
        rejected += too_large
        for events, chunk in wire_batches(kept, envelopes, self.max_batch_events, self.max_batch_bytes):
            rejected += self._send_splitting(events, chunk)
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _send_splitting(self, events: List[Event], envelopes: List[bytes]) -> List[Rejection]:
        """Import ``events``; a request refused for its content is split in halves, and an event
        refused alone is rejected with the service's reason."""
        refusal = self._import(envelopes)
        if refusal is None:
            return []
        if len(events) == 1:
            return [Rejection(events[0], f"{WHO} refused the event: {refusal}")]
        half = len(events) // 2
        return self._send_splitting(events[:half], envelopes[:half]) + self._send_splitting(
            events[half:], envelopes[half:]
        )

    def _import(self, envelopes: List[bytes]) -> Optional[str]:
        """One request: None once accepted, the refusal's text on 400/413; SinkError otherwise."""
        body = request_body(envelopes)
        response = self._authorized(self.import_url, body)
        if response.status_code in (400, 413):
            return google_error(response)
        if response.status_code != 200:
            raise self._refused(response, "the import")
        if response.content.strip() and json_object(response) is None:
            raise self._poster.unproven(response, "not the JSON reply of an accepted import")
        return None

    def _authorized(self, url: str, body: bytes, method: str = "POST") -> requests.Response:
        """The request with a bearer token; once more with a new token when the first is refused (401)."""
        token = self._tokens.get()
        response = self._with_token(url, body, method, token)
        if response.status_code == 401:
            self._tokens.forget(token)
            response = self._with_token(url, body, method, self._tokens.get())
        return response

    def _with_token(self, url: str, body: bytes, method: str, token: str) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"}
        return self._poster.post(url, body, JSON, compress=False, method=method, headers=headers)

    def _post_form(self, url: str, form: bytes) -> google_auth.TokenReply:
        response = self._poster.post(url, form, google_auth.FORM, compress=False)
        return google_auth.TokenReply(
            response.status_code, json_object(response), google_error_or_oauth(response)
        )

    def _refused(self, response: requests.Response, what: str) -> SinkError:
        hints = {
            401: "check FORWARDER_SECOPS_CREDENTIALS",
            403: "check that the service account holds chronicle.events.import on the instance, and "
            "FORWARDER_SECOPS_PROJECT, FORWARDER_SECOPS_REGION and FORWARDER_SECOPS_INSTANCE",
            404: "check FORWARDER_SECOPS_PROJECT, FORWARDER_SECOPS_REGION, FORWARDER_SECOPS_INSTANCE and "
            "that FORWARDER_SINK is the instance's regional endpoint",
        }
        hint = hints.get(response.status_code)
        return self._poster.error(
            f"{WHO} refused {what}: {google_error(response)}" + (f"; {hint}" if hint else "")
        )

    def probe(self) -> str:
        """A token for the key (the key is valid and its account enabled), then the instance read
        (``instances.get``): it is there, at that endpoint, and the account may see it. No event is sent."""
        self._tokens.get()
        response = self._authorized(self.instance_url, b"", method="GET")
        if response.status_code != 200:
            raise self._refused(response, "reading the instance")
        return (
            f"{WHO} at {host_port(self.import_url)}: token issued to {self._tokens.key.client_email}; "
            f"instance {self.instance} found"
        )

    def close(self) -> None:
        self._poster.close()


def google_error_or_oauth(response: requests.Response) -> str:
    """A token endpoint's refusal: OAuth's ``{"error", "error_description"}``, else Google's form."""
    reply = json_object(response)
    if reply and isinstance(reply.get("error"), str):
        text = " ".join(str(reply.get("error_description") or "").split())[:_MESSAGE_LIMIT]
        return f"HTTP {response.status_code} {reply['error']}" + (f": {text}" if text else "")
    return google_error(response)


def format_problem(event_format: str, settings: SinkSettings) -> Optional[str]:
    if event_format == "udm":
        return None
    return f"the Google SecOps sink imports UDM events: set FORWARDER_FORMAT=udm (got {event_format!r})"


def validate(settings: SinkSettings) -> None:
    endpoint(settings.address)
    instance_path(settings)
    problem = google_auth.signing_problem()
    if problem:
        raise ValueError(problem)
    if not (settings.options_of(SecOpsOptions).credentials or "").strip():
        google_auth.load_key(None, settings.timeout_seconds)  # its message names the variable


def probe(settings: SinkSettings, retry_policy: Optional[retry.RetryPolicy] = None) -> str:
    try:
        sink = SecOpsSink(settings, retry_policy)
    except ValueError as exc:
        raise SinkError(str(exc)) from None
    return probed(sink)


open_sink = SecOpsSink
