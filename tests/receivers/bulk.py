"""A loopback Elasticsearch ``_bulk`` endpoint, faithful to the documented protocol where the sink
depends on it.

* Routes ``POST|PUT /_bulk`` and ``/<index>/_bulk``; ``Content-Type`` must be ``application/x-ndjson``
  or ``application/json`` (else 406); gzip bodies are decoded; a body over ``max_content_length``
  (on the wire or decompressed) gets 413 with no JSON, as from Elasticsearch's HTTP layer.
* Auth: ``Authorization: ApiKey base64(id:key)`` against ``api_keys`` or ``Basic base64(user:pass)``
  against ``users``; a missing or wrong one gets 401 ``security_exception`` with ``WWW-Authenticate``.
* Body: action/source line pairs (``delete`` has no source), the body terminated by a newline (400
  ``illegal_argument_exception`` otherwise), an action of one of index/create/update/delete, an index
  from the line or the URL (400 ``action_request_validation_exception`` when neither).
* Items: indices named ``logs-*`` are data streams: only ``create`` is allowed and ``@timestamp`` is
  required (400). ``create`` of an ``_id`` that exists: 409 ``version_conflict_engine_exception``.
  Every index maps fields dynamically from the first value seen (date detection off: strings are
  keyword, integers long, floats float, booleans boolean, objects object); a value that does not fit
  the mapping (an object where a keyword is mapped, text in a long) gets 400
  ``document_parsing_exception``. ``throttle_items(n)`` answers the next ``n`` items with 429
  ``es_rejected_execution_exception``.
* The reply: ``{"took", "errors", "items": [{<action>: {"_index", "_id", "status", ...}}]}``.

Whole-request fault knobs come from the base: ``fail_next``, ``drop_connection_next``,
``accept_then_fail_next``.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlsplit

from .http_collector import BadBody, LoopbackReceiver, Reply, TooLarge, decode_body, json_reply

ACTIONS = ("index", "create", "update", "delete")
_CONTENT_TYPES = ("application/x-ndjson", "application/json")


def _is_health(doc: Any) -> bool:
    event = doc.get("event") if isinstance(doc, dict) else None
    return isinstance(event, dict) and event.get("dataset") == "emailauth.forwarder.health"


class ItemError(Exception):
    def __init__(self, status: int, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.kind, self.reason = status, kind, reason


def es_error(status: int, kind: str, reason: str, headers: Optional[Dict[str, str]] = None) -> Reply:
    cause = {"type": kind, "reason": reason}
    return json_reply(status, {"error": {"root_cause": [cause], **cause}, "status": status}, headers)


def value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "float"
    if isinstance(value, dict):
        return "object"
    return "keyword"


def fits(mapped: str, value: Any) -> bool:
    """Whether Elasticsearch would index ``value`` into a field mapped as ``mapped`` (with coercion)."""
    kind = value_type(value)
    if mapped == "object" or kind == "object":
        return mapped == kind
    if mapped == "keyword":
        return True  # numbers and booleans are indexed as their text
    if mapped == "boolean":
        return kind == "boolean" or value in ("true", "false")
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return mapped == "float" or float(value).is_integer()


def leaves(doc: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, Any]]:
    """(dotted path, value) for every value, objects included; arrays give each element."""
    for key, value in doc.items():
        path = f"{prefix}{key}"
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            yield path, item
            if isinstance(item, dict):
                yield from leaves(item, path + ".")


class BulkReceiver(LoopbackReceiver):
    name = "bulk-receiver"

    def __init__(
        self,
        api_keys: Optional[Dict[str, str]] = None,
        users: Optional[Dict[str, str]] = None,
        max_content_length: int = 10_000_000,
        bulk_only: bool = False,  # Fluent Bit's Elasticsearch input: /_bulk only, else a plain-text 400
    ) -> None:
        super().__init__()
        self.bulk_only = bulk_only
        self.api_keys = {"key-id-1": "s3cr3t-api-key-value"} if api_keys is None else api_keys
        self.users = {"elastic": "changeme-pass:word"} if users is None else users
        self.max_content_length = max_content_length
        self.docs: Dict[str, Dict[str, Dict[str, Any]]] = {}  # index -> _id -> source
        self.mappings: Dict[str, Dict[str, str]] = {}  # index -> path -> type
        self.statuses: List[int] = []  # every item status, in order
        self._throttle = 0
        self._seq = 0
        # What `check` asks (Elasticsearch's security and template APIs): the privileges the
        # credentials hold on every index, and the index templates installed.
        self.privileges = {"create_doc", "index", "auto_configure"}
        self.templates = {"logs-emailauth.audit"}

    @property
    def url(self) -> str:
        return "elasticsearch+" + self.http_url

    def encoded_api_key(self) -> str:
        key_id, key = next(iter(self.api_keys.items()))
        return base64.b64encode(f"{key_id}:{key}".encode()).decode()

    def throttle_items(self, n: int) -> None:
        with self.lock:
            self._throttle += n

    def ids(self, index: str) -> List[str]:
        """The audit events' ids in ``index``: the runs' health events (``health``) left out."""
        with self.lock:
            return [i for i, doc in self.docs.get(index, {}).items() if not _is_health(doc)]

    def health(self, index: str) -> List[Dict[str, Any]]:
        """The runs' health events in ``index`` (they share the audit data stream)."""
        with self.lock:
            return [doc for doc in self.docs.get(index, {}).values() if _is_health(doc)]

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        path = urlsplit(target).path
        parts = path.strip("/").split("/")
        if self.bulk_only and path != "/_bulk":
            return 400, b"error: invalid HTTP endpoint", {"Content-Type": "text/plain"}
        if parts[0] in ("_security", "_index_template"):
            return self._cluster_api(method, parts, headers, raw)
        if method not in ("POST", "PUT") or parts[-1] != "_bulk" or len(parts) > 2:
            return es_error(405 if parts[-1] == "_bulk" else 404, "illegal_argument_exception", "bad route")
        problem = self._authenticate(headers.get("authorization"))
        if problem:
            return es_error(
                401, "security_exception", problem, {"WWW-Authenticate": 'ApiKey, Basic realm="security"'}
            )
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in _CONTENT_TYPES:
            return es_error(
                406, "illegal_argument_exception", f"Content-Type header [{content_type}] is not supported"
            )
        try:
            text = decode_body(headers, raw, self.max_content_length).decode("utf-8")
        except TooLarge:
            return 413, b"", {}
        except (BadBody, UnicodeDecodeError) as exc:
            return es_error(400, "parse_exception", str(exc))
        if not text.endswith("\n"):
            return es_error(
                400, "illegal_argument_exception", "The bulk request must be terminated by a newline [\\n]"
            )
        try:
            requests_ = self._parse(text, parts[0] if len(parts) == 2 else None)
        except ItemError as exc:
            return es_error(exc.status, exc.kind, exc.reason)
        items = [self._apply(*request) for request in requests_]
        errors = any(next(iter(item.values()))["status"] >= 300 for item in items)
        return json_reply(200, {"took": 1, "errors": errors, "items": items})

    def _cluster_api(self, method: str, parts: List[str], headers: Dict[str, str], raw: bytes) -> Reply:
        problem = self._authenticate(headers.get("authorization"))
        if problem:
            return es_error(401, "security_exception", problem)
        scheme, _, credentials = headers["authorization"].partition(" ")
        name = base64.b64decode(credentials).decode().partition(":")[0]
        if method == "GET" and parts == ["_security", "_authenticate"]:
            if scheme == "ApiKey":
                return json_reply(200, {"username": "elastic", "api_key": {"id": name, "name": "forwarder"}})
            return json_reply(200, {"username": name})
        if method == "POST" and parts == ["_security", "user", "_has_privileges"]:
            asked = json.loads(raw)["index"][0]
            held = {p: p in self.privileges for p in asked["privileges"]}
            index = {n: held for n in asked["names"]}
            return json_reply(200, {"has_all_requested": all(held.values()), "index": index})
        if method == "GET" and len(parts) == 2 and parts[0] == "_index_template":
            if parts[1] in self.templates:
                return json_reply(200, {"index_templates": [{"name": parts[1]}]})
            return es_error(
                404, "resource_not_found_exception", f"index template matching [{parts[1]}] not found"
            )
        return es_error(405, "illegal_argument_exception", "bad route")

    def _authenticate(self, value: Optional[str]) -> Optional[str]:
        if not value:
            return "missing authentication credentials for REST request [/_bulk]"
        scheme, _, credentials = value.partition(" ")
        try:
            name, _, secret = base64.b64decode(credentials, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return "unable to authenticate: malformed credentials"
        known = {"ApiKey": self.api_keys, "Basic": self.users}.get(scheme, {})
        if not secret or known.get(name) != secret:
            return f"unable to authenticate with provided credentials ({scheme or 'no scheme'})"
        return None

    def _parse(self, text: str, url_index: Optional[str]) -> List[Tuple[str, str, Optional[str], Any]]:
        """(action, index, _id, source) per item; a malformed body raises for the whole request."""
        lines = text.split("\n")[:-1]
        found: List[Tuple[str, str, Optional[str], Any]] = []
        at = 0
        while at < len(lines):
            try:
                action_line = json.loads(lines[at])
            except ValueError:
                raise ItemError(
                    400, "x_content_parse_exception", f"[{at + 1}:1] malformed action line"
                ) from None
            if (
                not isinstance(action_line, dict)
                or len(action_line) != 1
                or next(iter(action_line)) not in ACTIONS
            ):
                raise ItemError(
                    400, "illegal_argument_exception", f"Malformed action/metadata line [{at + 1}]"
                )
            action, meta = next(iter(action_line.items()))
            index = meta.get("_index") or url_index
            if not index:
                raise ItemError(
                    400, "action_request_validation_exception", "Validation Failed: 1: index is missing;"
                )
            source: Any = None
            if action != "delete":
                at += 1
                if at >= len(lines):
                    raise ItemError(
                        400, "illegal_argument_exception", "source is missing for the last action"
                    )
                try:
                    source = json.loads(lines[at])
                except ValueError:
                    source = ValueError(f"[{at + 1}:1] failed to parse: the source is not JSON")
            found.append((action, index, meta.get("_id"), source))
            at += 1
        if not found:
            raise ItemError(
                400, "action_request_validation_exception", "Validation Failed: 1: no requests added;"
            )
        return found

    def _apply(self, action: str, index: str, doc_id: Optional[str], source: Any) -> Dict[str, Any]:
        with self.lock:
            doc_id = doc_id or uuid.uuid4().hex
            backing = f".ds-{index}-2026.01.01-000001" if index.startswith("logs-") else index
            result: Dict[str, Any] = {"_index": backing, "_id": doc_id}
            try:
                self._store(action, index, doc_id, source)
            except ItemError as exc:
                result["status"] = exc.status
                result["error"] = {"type": exc.kind, "reason": exc.reason, "index": backing}
            else:
                self._seq += 1
                result.update(_version=1, result="created", _seq_no=self._seq, _primary_term=1, status=201)
                result["_shards"] = {"total": 2, "successful": 1, "failed": 0}
            self.statuses.append(result["status"])
        return {action: result}

    def _store(self, action: str, index: str, doc_id: str, source: Any) -> None:
        needed = {"create": "create_doc", "index": "index"}.get(action)
        if needed and needed not in self.privileges:  # as Elasticsearch answers each such item
            raise ItemError(
                403,
                "security_exception",
                f"action [indices:data/write/bulk[s]] is unauthorized for [{index}]",
            )
        if self._throttle > 0:
            self._throttle -= 1
            raise ItemError(
                429, "es_rejected_execution_exception", "rejected execution of coordinating operation"
            )
        if action not in ("create", "index"):
            raise ItemError(400, "illegal_argument_exception", f"{action} is not supported by this receiver")
        if index.startswith("logs-") and action != "create":
            raise ItemError(
                400,
                "illegal_argument_exception",
                "only write ops with an op_type of create are allowed in data streams",
            )
        if isinstance(source, Exception) or not isinstance(source, dict):
            raise ItemError(
                400,
                "document_parsing_exception",
                str(source) if isinstance(source, Exception) else "not an object",
            )
        if index.startswith("logs-") and "@timestamp" not in source:
            raise ItemError(
                400,
                "document_parsing_exception",
                "[1:2] failed to parse: data stream timestamp field [@timestamp] is missing",
            )
        docs = self.docs.setdefault(index, {})
        if action == "create" and doc_id in docs:
            raise ItemError(
                409,
                "version_conflict_engine_exception",
                f"[{doc_id}]: version conflict, document already exists (current version [1])",
            )
        mapping = self.mappings.setdefault(index, {})
        new: Dict[str, str] = {}
        for path, value in leaves(source):
            mapped = mapping.get(path) or new.get(path)
            if mapped is None:
                new[path] = value_type(value)
            elif not fits(mapped, value):
                preview = json.dumps(value)[:20]
                raise ItemError(
                    400,
                    "document_parsing_exception",
                    f"[1:2] failed to parse field [{path}] of type [{mapped}] in document with id "
                    f"'{doc_id}'. Preview of field's value: '{preview}'",
                )
        mapping.update(new)
        docs[doc_id] = source
