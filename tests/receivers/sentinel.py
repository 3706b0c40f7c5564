"""A loopback Microsoft Entra ID token endpoint and Azure Monitor Logs Ingestion endpoint, in one server.

Entra ID (``/{tenant}/oauth2/v2.0/token``): a client-credentials grant for the Monitor scope (``https://monitor.azure.com/.default``,
as Microsoft's client asks, or with ``//`` as the REST documentation writes it), with the
app's id and secret in the form; answers ``{"token_type": "Bearer", "expires_in", "access_token"}``,
or OAuth errors as Entra words them (``invalid_client`` AADSTS7000215 for a wrong secret, 401).
``/{tenant}/v2.0/.well-known/openid-configuration`` answers the discovery MSAL asks first.

Ingestion (``/dataCollectionRules/{rule}/streams/{stream}?api-version=2023-01-01``) checks what the
service checks: the api-version, a bearer token this server issued and that has not expired (401),
the rule and stream (404), ``Content-Type: application/json`` (415), the size of the call on the wire
and decompressed (413 over ``max_request_bytes``), gzip that inflates, and a JSON array of objects
each with a ``TimeGenerated`` (400). The real service answers 204 to a bare object and stores nothing;
this one refuses it, so a sink that sent one fails here instead of losing rows quietly. Accepted rows
are kept in ``rows()``, and the answer is 204 with no body. Faults come from ``LoopbackReceiver``
(``fail_next`` with ``Retry-After``...), worded as Azure errors.
"""

from __future__ import annotations

import json
import ssl
from typing import Any, Dict, List, Optional
from urllib.parse import parse_qs, urlsplit

from tests.receivers.bearer import BearerTokens
from tests.receivers.http_collector import (
    BadBody,
    Fault,
    LoopbackReceiver,
    Reply,
    TooLarge,
    decode_body,
    json_reply,
)

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CLIENT_ID = "2d6f7c7a-5b1e-4e0a-9f7e-1c2b3a4d5e6f"
CLIENT_SECRET = "Qx8~tEst.sEcrEt_vAluE-0123456789abcdefXYZ"
RULE_ID = "dcr-0123456789abcdef0123456789abcdef"
STREAM = "Custom-EmailAuthAudit_CL"
RESOURCE = "https://monitor.azure.com"  # its scope is ``<resource>/.default``, a // before it allowed
API_VERSION = "2023-01-01"
LIMIT = 1_000_000  # the service's 1 MB per call


def azure_error(status: int, code: str, message: str, headers: Optional[Dict[str, str]] = None) -> Reply:
    return json_reply(status, {"error": {"code": code, "message": message}}, headers)


class SentinelReceiver(LoopbackReceiver):
    name = "sentinel"

    def __init__(
        self,
        tls: Optional[ssl.SSLContext] = None,
        token_lifetime: int = 3599,
        max_request_bytes: int = LIMIT,
    ) -> None:
        super().__init__()
        self.tls = tls
        if tls is not None:  # the handshake runs at accept, in the serving thread: fine for a test
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.token_lifetime = token_lifetime
        self.max_request_bytes = max_request_bytes
        self.tokens = BearerTokens()
        self._rows: List[Dict[str, Any]] = []
        self.token_requests = 0
        self.uploads: List[int] = []  # decompressed size of every accepted call
        self.wire_sizes: List[int] = []  # size on the wire of every ingestion call, whatever the answer
        self.flaky_every = 0  # > 0: every n-th ingestion call is refused, 429 and 503 in turn, unstored
        self._calls = 0

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def sink_uri(self) -> str:
        return f"sentinel+{self.base_url}"

    def env(self) -> Dict[str, str]:
        """The forwarder's settings for this server."""
        return {
            "FORWARDER_SINK": self.sink_uri,
            "FORWARDER_SENTINEL_RULE_ID": RULE_ID,
            "FORWARDER_AZURE_TENANT_ID": TENANT,
            "FORWARDER_AZURE_CLIENT_ID": CLIENT_ID,
            "FORWARDER_AZURE_CLIENT_SECRET": CLIENT_SECRET,
            "FORWARDER_AZURE_AUTHORITY": self.base_url,
        }

    def rows(self) -> List[Dict[str, Any]]:
        with self.lock:
            return list(self._rows)

    def revoke_tokens(self) -> None:
        """Every token issued so far is refused from now on (401)."""
        self.tokens.revoke()

    def issued(self) -> List[str]:
        return self.tokens.issued()

    def fault_reply(self, fault: Fault) -> Reply:
        code = "TooManyRequests" if fault.status == 429 else "ServiceUnavailable"
        return azure_error(fault.status, code, "injected", fault.headers)

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        parts = urlsplit(target)
        path = parts.path
        if path == f"/{TENANT}/oauth2/v2.0/token" and method == "POST":
            return self._token(headers, raw)
        if path == f"/{TENANT}/v2.0/.well-known/openid-configuration" and method == "GET":
            return self._discovery()
        if path.startswith("/dataCollectionRules/") and method == "POST":
            return self._ingest(path, parse_qs(parts.query), headers, raw)
        if path.endswith("/oauth2/v2.0/token") or path.endswith("/openid-configuration"):
            return json_reply(
                400,
                {"error": "invalid_request", "error_description": "AADSTS90002: Tenant not found."},
            )
        return azure_error(404, "NotFound", f"no route for {method} {path}")

    def _discovery(self) -> Reply:
        base = f"{self.base_url}/{TENANT}"
        return json_reply(
            200,
            {
                "token_endpoint": f"{base}/oauth2/v2.0/token",
                "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "issuer": f"{base}/v2.0",
                "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            },
        )

    def _token(self, headers: Dict[str, str], raw: bytes) -> Reply:
        with self.lock:
            self.token_requests += 1
        if not headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return json_reply(400, {"error": "invalid_request", "error_description": "AADSTS900144: form"})
        form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8")).items()}
        if form.get("grant_type") != "client_credentials":
            return json_reply(400, {"error": "unsupported_grant_type", "error_description": "AADSTS70003"})
        if form.get("client_id") != CLIENT_ID:
            return json_reply(
                400,
                {
                    "error": "unauthorized_client",
                    "error_description": f"AADSTS700016: Application with identifier "
                    f"'{form.get('client_id')}' was not found in the directory.",
                },
            )
        if form.get("client_secret") != CLIENT_SECRET:
            return json_reply(
                401,
                {
                    "error": "invalid_client",
                    "error_description": "AADSTS7000215: Invalid client secret provided. Ensure the "
                    f"secret being sent in the request is the client secret value, not the client "
                    f"secret ID, for a secret added to app '{CLIENT_ID}'.",
                },
            )
        scope = form.get("scope") or ""
        if not scope.endswith("/.default") or scope[: -len("/.default")].rstrip("/") != RESOURCE:
            return json_reply(400, {"error": "invalid_scope", "error_description": "AADSTS1002012"})
        token = self.tokens.issue("eyJ0eXAiOiJKV1QifQ.", self.token_lifetime)
        reply = {
            "token_type": "Bearer",
            "expires_in": self.token_lifetime,
            "ext_expires_in": self.token_lifetime,
            "access_token": token,
        }
        return json_reply(200, reply)

    def _ingest(self, path: str, query: Dict[str, List[str]], headers: Dict[str, str], raw: bytes) -> Reply:
        with self.lock:
            self.wire_sizes.append(len(raw))
            self._calls += 1
            calls = self._calls
        if self.flaky_every and calls % self.flaky_every == 0:
            if (calls // self.flaky_every) % 2:
                return azure_error(429, "TooManyRequests", "over the rate", {"Retry-After": "1"})
            return azure_error(503, "ServiceUnavailable", "try again")
        if query.get("api-version") != [API_VERSION]:
            return azure_error(400, "InvalidApiVersion", "api-version is missing or not supported")
        auth = headers.get("authorization", "")
        if not (auth.startswith("Bearer ") and self.tokens.live(auth[len("Bearer ") :])):
            return azure_error(401, "InvalidToken", "The provided token is missing, invalid or expired.")
        segments = path.split("/")
        if len(segments) != 5 or segments[2] != RULE_ID or segments[3] != "streams":
            return azure_error(404, "NotFound", "Data collection rule with immutable Id not found.")
        if segments[4] != STREAM:
            return azure_error(404, "InvalidStream", f"Stream {segments[4]} is not declared by the rule.")
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return azure_error(415, "UnsupportedMediaType", "Content-Type must be application/json")
        try:
            text = decode_body(headers, raw, self.max_request_bytes).decode("utf-8")
            body = json.loads(text)
        except TooLarge:
            return azure_error(413, "ContentLengthLimitExceeded", "The request is over 1 MB.")
        except (BadBody, UnicodeDecodeError, ValueError) as exc:
            return azure_error(400, "InvalidContent", f"the body is not JSON: {type(exc).__name__}")
        if not isinstance(body, list):
            return azure_error(400, "InvalidContent", "the body must be a JSON array")
        if not all(isinstance(item, dict) and isinstance(item.get("TimeGenerated"), str) for item in body):
            return azure_error(400, "InvalidContent", "every element must be an object with TimeGenerated")
        with self.lock:
            self._rows.extend(body)
            self.uploads.append(len(text.encode("utf-8")))
        return 204, b"", {}
