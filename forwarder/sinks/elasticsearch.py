"""Elasticsearch / OpenSearch sink: ``elasticsearch+https://es.example.com:9200`` (``opensearch+https://``
alike; ``+http://`` for loopback only). A path is a prefix (a proxy's) put before ``/_bulk``.

Protocol choices, from the ``_bulk`` API documentation:

* Target. The data stream ``logs-emailauth.audit-<namespace>`` (``ElasticOptions.namespace``), which the
  index template in ``elasticsearch/`` of this repository configures, named by ``_index`` in every
  action line: requests go to ``/_bulk``, which Elasticsearch, OpenSearch and ``_bulk``-only receivers
  (Fluent Bit's Elasticsearch input, ingest shims) all route. Every document is a ``create``
  with ``_id`` = the event id: a re-sent batch cannot index an event twice, and the 409
  ``version_conflict_engine_exception`` it gets for a document already there counts as delivered.
* Documents. A JSON event is sent byte for byte (ECS carries the ``@timestamp`` a data stream needs);
  a text (CEF) event becomes ``{"@timestamp", "event": {"id"}, "message": <line>}``.
* Per-item results. 2xx and 409: delivered. 429 and 5xx: sent again, alone with the other such items,
  with backoff; still refused when the attempts run out: a retryable SinkError. 400 (a mapping or
  parsing error): a rejection carrying Elasticsearch's error type and reason, for the quarantine.
  Anything else (401/403/404 on an item: privileges, a missing template) raises: it is not the
  event's fault and would refuse every event alike.
* Requests. Bounded by ``max_batch_events`` and ``max_batch_bytes`` of NDJSON (action and source
  lines); gzipped when ``settings.gzip``; 413 splits in halves; 429/5xx/connection errors on the
  whole request are retried as for HEC.
* Auth. ``FORWARDER_SINK_TOKEN`` is an API key by default: the ``encoded`` value Elasticsearch
  returns, or ``id:api_key`` (encoded here); both go in ``Authorization: ApiKey``. With
  ``settings.auth == "basic"`` the token is ``user:password``.
"""

from __future__ import annotations

import base64
import functools
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import SplitResult

import requests

from .. import jsonutil, retry
from ..events import Event, Rejection, SendResult
from ..kinds import Text
from ..logs import quoted
from ..timeutil import format_us
from ..urls import check_url, host_port
from ..variables import PER_TENANT, Variable
from .http_post import (
    HttpPoster,
    authorization,
    describe_reply,
    json_object,
    send_halving,
    status_hint,
    wire_batches,
)
from .settings import SinkOptions, SinkSettings, option

DATASET = "emailauth.audit"
DEFAULT_MAX_EVENTS = 1000
DEFAULT_MAX_BYTES = 5_000_000  # Elastic's advice for bulk requests: a few MB
_SCHEMES = ("elasticsearch+", "opensearch+")
_NAMESPACE = re.compile(r"^[a-z0-9_.+]{1,100}$")  # data stream naming: lowercase, no '-'
_REASON_LIMIT = 500
WHO = "Elasticsearch"
JSON = "application/json"


@dataclass(frozen=True)
class ElasticOptions(SinkOptions):
    namespace: str = option(
        Variable(
            "FORWARDER_ES_NAMESPACE",
            "Elasticsearch data stream namespace: `logs-emailauth.audit-<namespace>`",
            Text(),
            "default",
            tenant=PER_TENANT,
        )
    )  # logs-emailauth.audit-<namespace>


Options = ElasticOptions
_TEMPLATE = f"logs-{DATASET}"  # elasticsearch/index_template.json, as installed by elasticsearch/README.md
_PRIVILEGES = ("create_doc", "auto_configure")


def data_stream(namespace: str) -> str:
    """``logs-emailauth.audit-<namespace>``; ValueError for a namespace Elasticsearch would refuse."""
    if not _NAMESPACE.match(namespace) or namespace.startswith(("_", ".", "+")):
        raise ValueError(
            f"Elasticsearch namespace {quoted(namespace)} is not valid: use lowercase letters, digits, "
            "'_', '.' or '+' (no '-'), at most 100 characters, e.g. default or production"
        )
    return f"logs-{DATASET}-{namespace}"


def bulk_url(parts: SplitResult, namespace: str) -> str:
    """The ``_bulk`` URL (the data stream is named in each action line); ValueError naming FORWARDER_SINK."""
    scheme = parts.scheme.lower()
    prefix = next((p for p in _SCHEMES if scheme.startswith(p)), None)
    if prefix is None:
        raise ValueError(
            "FORWARDER_SINK for Elasticsearch must look like elasticsearch+https://es.example.com:9200"
        )
    http_scheme = scheme[len(prefix) :]
    problem = check_url(f"{http_scheme}://{parts.netloc}{parts.path}", "FORWARDER_SINK")
    if problem:
        raise ValueError(
            f"{problem}; an Elasticsearch sink looks like elasticsearch+https://es.example.com:9200"
        )
    if parts.query or parts.fragment:
        raise ValueError("FORWARDER_SINK for Elasticsearch takes no query string")
    data_stream(namespace)  # refuse a bad namespace with the URI
    return f"{http_scheme}://{parts.netloc}{parts.path.rstrip('/')}/_bulk"


def es_authorization(kind: str, token: Optional[str]) -> str:
    token = (token or "").strip()
    if not token:
        raise ValueError("FORWARDER_SINK_TOKEN (an API key, or user:password with basic auth) is required")
    kind = kind or "apikey"
    if kind == "apikey" and ":" in token:  # id:api_key as created; the header wants it encoded
        token = base64.b64encode(token.encode("utf-8")).decode("ascii")
    if kind not in ("apikey", "basic"):
        raise ValueError(f"Elasticsearch auth must be apikey or basic (got {quoted(kind)})")
    return authorization(kind, token)


def document(event: Event) -> bytes:
    if event.is_json:
        return event.body
    wrapped = {
        "@timestamp": format_us(event.time_us),
        "event": {"id": event.id},
        "message": event.body.decode("utf-8"),
    }
    return jsonutil.dumps(wrapped)


def bulk_lines(event: Event, index: str) -> bytes:
    """The ``create`` action and the source, each line ended by ``\\n`` as ``_bulk`` requires."""
    action = jsonutil.dumps({"create": {"_index": index, "_id": event.id}})
    return action + b"\n" + document(event) + b"\n"


def error_text(error: Any) -> str:
    """``type: reason (caused by type: reason)`` from an Elasticsearch error object, bounded."""
    if not isinstance(error, dict):
        return str(error)[:_REASON_LIMIT]
    text = f"{error.get('type', 'error')}: {error.get('reason', '')}"
    cause = error.get("caused_by")
    if isinstance(cause, dict):
        text += f" (caused by {cause.get('type', 'error')}: {cause.get('reason', '')})"
    return text[:_REASON_LIMIT]


def describe(response: requests.Response) -> str:
    reply = json_object(response)
    if reply is not None and reply.get("error") is not None:
        return f"HTTP {response.status_code}: {error_text(reply['error'])}"
    return describe_reply(response)  # Fluent Bit and proxies answer in plain text: quote it


class ElasticsearchSink:
    name = "elasticsearch"

    def __init__(self, settings: SinkSettings, retry_policy: Optional[retry.RetryPolicy] = None) -> None:
        namespace = settings.options_of(ElasticOptions).namespace
        self.url = bulk_url(settings.address, namespace)
        self.index = data_stream(namespace)
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        self.max_batch_bytes = settings.batch_bytes or DEFAULT_MAX_BYTES
        self.max_in_flight = 4  # concurrent requests are safe: each batch stands alone
        header = es_authorization(settings.auth, settings.token)
        secrets = [settings.token or "", header, header.partition(" ")[2]]
        headers = {"Authorization": header, "Accept": "application/json"}
        self._poster = HttpPoster(WHO, settings, headers, secrets, retry_policy, describe)

    def __repr__(self) -> str:
        return f"ElasticsearchSink(url={self.url!r})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        lines = [bulk_lines(event, self.index) for event in batch]
        rejected: List[Rejection] = []
        for events, chunk in wire_batches(batch, lines, self.max_batch_events, self.max_batch_bytes):
            rejected += self._deliver(events, chunk)
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _deliver(self, events: List[Event], lines: List[bytes]) -> List[Rejection]:
        """Send, then send again only the items refused for a passing reason (429, 5xx)."""
        rejected: List[Rejection] = []
        pending: List[Tuple[Event, bytes]] = list(zip(events, lines))

        def attempt() -> None:
            again: List[Tuple[Event, bytes]] = []
            post = functools.partial(self._bulk, again=again)
            rejected.extend(send_halving([e for e, _ in pending], [line for _, line in pending], post, WHO))
            pending[:] = again
            if again:
                raise retry.TryAgain(f"{len(again)} document(s) refused with 429/5xx")

        def give_up(failure: retry.Failure) -> None:
            raise self._poster.error(
                f"{WHO} still refused {len(pending)} document(s) with 429/5xx "
                f"after {failure.attempts} attempts",
                retryable=True,
            )

        retry.call(self._poster.retry, attempt, give_up, f"{WHO} bulk items")
        return rejected

    def _bulk(
        self, events: List[Event], lines: List[bytes], again: List[Tuple[Event, bytes]]
    ) -> Optional[List[Rejection]]:
        """One ``_bulk`` request: None on 413, else the rejections; items to retry go to ``again``."""
        response = self._poster.post_batch(self.url, b"".join(lines))
        if response is None:
            return None
        rejected: List[Rejection] = []
        for event, line, item in zip(events, lines, self._items(response, len(events))):
            status, error = item.get("status"), item.get("error")
            if isinstance(status, bool) or not isinstance(status, int):
                raise self._poster.error(f"{WHO} answered an item without a status", retryable=True)
            if 200 <= status < 300 or status == 409:
                continue
            if status == 429 or status >= 500:
                again.append((event, line))
            elif status == 400:
                rejected.append(Rejection(event, f"{WHO} refused the document: {error_text(error)}"))
            else:
                hint = status_hint(status)
                raise self._poster.error(
                    f"{WHO} refused a document with HTTP {status}: {error_text(error)}{hint}"
                )
        return rejected

    def _items(self, response: requests.Response, count: int) -> List[Dict[str, Any]]:
        try:
            reply = response.json()
            items = [next(iter(item.values())) for item in reply["items"]]
        except (ValueError, KeyError, TypeError, AttributeError, StopIteration):
            items = []
        if len(items) != count or not all(isinstance(item, dict) for item in items):
            # Nothing tells which documents were indexed; sending all again is safe (create + _id).
            raise self._poster.error(
                f"{WHO} answered the bulk request without one result per document", retryable=True
            )
        return items

    def probe(self) -> str:
        """Who the credentials are (``_security/_authenticate``, which any user may call), whether they
        may write the data stream (``_has_privileges``: create_doc and auto_configure, as
        elasticsearch/README.md asks) and whether the index template is installed. A cluster without
        the security API (OpenSearch, security off, a ``_bulk``-only receiver) is only reached."""
        base = self.url[: -len("/_bulk")]
        who = self._poster.post(base + "/_security/_authenticate", b"", JSON, compress=False, method="GET")
        if who.status_code in (401, 403):
            raise self._poster.refused(who, "the credentials")
        found = [f"{WHO} at {host_port(self.url)}"]
        if who.status_code != 200:
            return found[0] + f": reachable (HTTP {who.status_code}, no security API: nothing else checked)"
        user = json_object(who) or {}
        found.append(f"authenticated as {(user.get('api_key') or {}).get('name') or user.get('username')}")
        asked = {"index": [{"names": [self.index], "privileges": list(_PRIVILEGES)}]}
        body = jsonutil.dumps(asked)
        granted = self._poster.post(base + "/_security/user/_has_privileges", body, JSON, compress=False)
        reply = json_object(granted) or {}
        if granted.status_code == 200 and reply.get("has_all_requested") is False:
            raise self._poster.error(
                f"{WHO}: the credentials may not write {self.index} (they need "
                f"{' and '.join(_PRIVILEGES)} on it, see elasticsearch/README.md); check FORWARDER_SINK_TOKEN"
            )
        found.append(f"may write {self.index}" if granted.status_code == 200 else "privileges not checked")
        template = self._poster.post(base + f"/_index_template/{_TEMPLATE}", b"", JSON, False, method="GET")
        if template.status_code == 404:
            raise self._poster.error(
                f"{WHO}: no index template {_TEMPLATE}: install it first (elasticsearch/README.md), or the "
                "data stream gets dynamic mappings"
            )
        found.append(
            f"index template {_TEMPLATE} installed"
            if template.status_code == 200
            else f"index template not checked (HTTP {template.status_code}: the credentials may not read it)"
        )
        return found[0] + ": " + "; ".join(found[1:])

    def close(self) -> None:
        self._poster.close()


def format_problem(event_format: str, settings: SinkSettings) -> Optional[str]:
    """A data stream needs ``@timestamp``: only ECS (and CEF, wrapped in one) documents carry it."""
    if event_format in ("ecs", "cef"):
        return None
    return (
        f"{event_format!r} documents carry no @timestamp, which an Elasticsearch data stream "
        "requires; use ecs (or cef) with an Elasticsearch sink"
    )


def validate(settings: SinkSettings) -> None:
    bulk_url(settings.address, settings.options_of(ElasticOptions).namespace)
    es_authorization(settings.auth, settings.token)


open_sink = ElasticsearchSink
