"""A loopback Google SecOps: Google's OAuth token endpoint for service accounts and the Chronicle API's
``events:import`` and ``instances.get``, checking what the services check.

* ``POST /token``: a form with ``grant_type`` jwt-bearer and an ``assertion``, a JWT signed RS256 by
  the account's key (verified with its public key, found by ``kid`` and ``iss``), ``aud`` this
  endpoint, ``exp`` at most an hour after ``iat``, ``iat`` within five minutes of now, a ``scope``.
  Refusals as Google words them: 400 ``invalid_grant`` (OAuth's error form). A token lives
  ``token_seconds``; ``revoke_tokens()`` makes the tokens issued so far fail with 401, and
  ``tokens_accepted = False`` every token, issued or to come.
* ``POST /v1/{instance}/events:import``: a live bearer token with the cloud-platform scope (401
  UNAUTHENTICATED / 403), the instance this fake is (404 NOT_FOUND otherwise), ``Content-Type:
  application/json``, a body of at most ``max_request_bytes`` (400 INVALID_ARGUMENT; such a request
  is also counted in ``oversized``), ``{"inlineSource": {"events": [{"udm": {...}}, ...]}}`` with at
  least one event, each a UDM event that has ``metadata.event_timestamp`` (RFC 3339) and a known
  ``metadata.event_type`` with the nouns that type requires, and only UDM's top-level fields. One
  bad event refuses the whole request (400 INVALID_ARGUMENT naming it); so does an event whose
  ``product_log_id`` is in ``poisoned``. Accepted: 200 ``{}``, every event kept in ``events``.
* ``GET /v1/{instance}``: the instance, for ``check``.

Google's error replies: ``{"error": {"code", "message", "status"}}``. The base's fault knobs
(``fail_next``...) apply to the Chronicle API paths; ``fail_token_next`` to the token endpoint.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections import deque
from pathlib import Path
from typing import Any, Deque, Dict, List, Optional, Set, Tuple
from urllib.parse import parse_qs, urlsplit

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from .bearer import BearerTokens
from .http_collector import LoopbackReceiver, Reply, json_reply
from .udm_checks import at_path, udm_problem

PROJECT = "emailauth-secops"
REGION = "us"
INSTANCE = "3f0ac524-5ae1-4bfd-b86d-53afc953e7e6"
CLIENT_EMAIL = "forwarder@emailauth-secops.iam.gserviceaccount.com"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def google_error(status: int, code: str, message: str) -> Reply:
    return json_reply(status, {"error": {"code": status, "message": message, "status": code}})


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class SecOpsFake(LoopbackReceiver):
    name = "secops-fake"

    def __init__(self, max_request_bytes: int = 1_000_000, token_seconds: int = 3600) -> None:
        super().__init__()
        self.max_request_bytes = max_request_bytes
        self.token_seconds = token_seconds
        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.key_id = secrets.token_hex(20)
        self.events: List[Dict[str, Any]] = []
        self.poisoned: Set[str] = set()
        self.oversized = 0
        self.largest_request = 0
        self.imports = 0  # import requests, answered whatever the answer
        self.token_requests = 0
        self.tokens_accepted = True  # False: the API refuses every token (401); they are still issued
        self.tokens = BearerTokens()
        self._token_faults: Deque[int] = deque()

    @property
    def url(self) -> str:
        return "secops+" + self.http_url

    @property
    def token_uri(self) -> str:
        return self.http_url + "/token"

    @property
    def instance(self) -> str:
        return f"projects/{PROJECT}/locations/{REGION}/instances/{INSTANCE}"

    def key_document(self) -> Dict[str, Any]:
        pem = self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
        return {
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": self.key_id,
            "private_key": pem,
            "client_email": CLIENT_EMAIL,
            "client_id": "104729341985512345678",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.token_uri,
        }

    def key_file(self, directory: Path) -> Path:
        path = directory / "secops-key.json"
        path.write_text(json.dumps(self.key_document(), indent=2), encoding="utf-8")
        return path

    def ids(self) -> List[str]:
        with self.lock:
            return [event["metadata"]["product_log_id"] for event in self.events]

    def fail_token_next(self, n: int, status: int = 503) -> None:
        with self.lock:
            self._token_faults.extend([status] * n)

    def revoke_tokens(self) -> None:
        self.tokens.revoke()

    def issued(self) -> List[str]:
        return self.tokens.issued()

    def handle(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        if urlsplit(target).path == "/token":
            with self.lock:
                self.token_requests += 1
                fault = self._token_faults.popleft() if self._token_faults else None
            if fault is not None:
                return google_error(fault, "UNAVAILABLE", "injected")
            return self._token(method, headers, raw)
        return super().handle(method, target, headers, raw)

    def fault_reply(self, fault: Any) -> Reply:
        status, code = fault.status, {429: "RESOURCE_EXHAUSTED"}.get(fault.status, "UNAVAILABLE")
        body = json.dumps({"error": {"code": status, "message": "injected", "status": code}}).encode()
        return status, body, {"Content-Type": "application/json", **fault.headers}

    # -- OAuth ---------------------------------------------------------------------------------------

    def _token(self, method: str, headers: Dict[str, str], raw: bytes) -> Reply:
        def refuse(description: str) -> Reply:
            return json_reply(400, {"error": "invalid_grant", "error_description": description})

        if method != "POST" or not headers.get("content-type", "").startswith(
            "application/x-www-form-urlencoded"
        ):
            return json_reply(400, {"error": "invalid_request", "error_description": "form POST expected"})
        form = {key: values[0] for key, values in parse_qs(raw.decode("ascii")).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return json_reply(
                400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type"}
            )
        claims, problem = self._verified(form.get("assertion", ""))
        if problem:
            return refuse(problem)
        token = self.tokens.issue("ya29.", self.token_seconds)
        with self.lock:
            self._scopes = str(claims.get("scope", "")).split()
        return json_reply(
            200, {"access_token": token, "expires_in": self.token_seconds, "token_type": "Bearer"}
        )

    def _verified(self, jwt: str) -> Tuple[Dict[str, Any], Optional[str]]:
        parts = jwt.split(".")
        if len(parts) != 3:
            return {}, "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe."
        try:
            header, claims = json.loads(_unb64(parts[0])), json.loads(_unb64(parts[1]))
        except ValueError:
            return {}, "Invalid JWT: malformed"
        if (
            header.get("alg") != "RS256"
            or header.get("kid") != self.key_id
            or claims.get("iss") != CLIENT_EMAIL
        ):
            return {}, "Invalid JWT Signature."
        try:
            self.private_key.public_key().verify(
                _unb64(parts[2]), f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            return {}, "Invalid JWT Signature."
        if claims.get("aud") != self.token_uri:
            return {}, "Invalid JWT: Failed audience check."
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int) or not 0 < exp - iat <= 3600:
            return {}, "Invalid JWT: Token must be a short-lived token (60 minutes)"
        if abs(iat - time.time()) > 300:
            return {}, "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe."
        if not claims.get("scope"):
            return {}, "Invalid OAuth scope or ID token audience provided."
        return claims, None

    # -- Chronicle API -------------------------------------------------------------------------------

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        path = urlsplit(target).path
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not self.tokens.live(token) or not self.tokens_accepted:
            return google_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        if SCOPE not in getattr(self, "_scopes", []):
            return google_error(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.")
        if method == "GET" and path == f"/v1/{self.instance}":
            return json_reply(200, {"name": self.instance})
        if method != "POST" or path != f"/v1/{self.instance}/events:import":
            return google_error(404, "NOT_FOUND", f"Requested entity was not found: {path}")
        return self._import(headers, raw)

    def _import(self, headers: Dict[str, str], raw: bytes) -> Reply:
        with self.lock:
            self.imports += 1
            self.largest_request = max(self.largest_request, len(raw))
        if not headers.get("content-type", "").startswith("application/json"):
            return google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload: content type")
        if len(raw) > self.max_request_bytes:
            with self.lock:
                self.oversized += 1
            return google_error(
                400,
                "INVALID_ARGUMENT",
                f"Request payload size exceeds the limit: {self.max_request_bytes} bytes.",
            )
        try:
            body = json.loads(raw)
        except ValueError:
            return google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        source = body.get("inlineSource", body.get("inline_source")) if isinstance(body, dict) else None
        events = source.get("events") if isinstance(source, dict) else None
        if not isinstance(events, list) or not events:
            return google_error(400, "INVALID_ARGUMENT", "inline_source.events must not be empty")
        for at, event in enumerate(events):
            udm = event.get("udm") if isinstance(event, dict) and set(event) == {"udm"} else None
            problem = udm_problem(udm)
            if problem is None and at_path(udm, "metadata.product_log_id") in self.poisoned:
                problem = "event rejected by validation"
            if problem:
                return google_error(400, "INVALID_ARGUMENT", f"events[{at}]: {problem}")
        with self.lock:
            self.events.extend(event["udm"] for event in events)
        return json_reply(200, {})
