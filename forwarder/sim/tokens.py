"""The simulated token endpoint: client credentials in, bearer tokens out, and the check of a
bearer token on every other request."""

from __future__ import annotations

import hmac
import secrets
import threading
from typing import Callable, Dict, List, Optional
from urllib.parse import parse_qs

from .messages import Reply, error_reply, json_reply, one


class TokenIssuer:
    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        lifetime: int,
        created_ms: bool,
        require_grant_type: bool,
        clock: Callable[[], float],
    ) -> None:
        self.client_id = client_id
        self._client_secret = client_secret
        self.lifetime = lifetime
        self.created_ms = created_ms  # created_at in milliseconds, as some deployments send it
        self.require_grant_type = require_grant_type  # an OAuth-style endpoint: 400 without grant_type
        self._clock = clock
        # Guards the live tokens and the issued list: handler threads issue and check tokens while a
        # test revokes them or reads the list.
        self._lock = threading.Lock()
        self._live: Dict[str, float] = {}  # token -> issue time (clock seconds)
        self.issued: List[str] = []  # every token ever issued, for tests that hunt for leaks

    def reply(self, content_type: str, body: bytes, strict: bool) -> Reply:
        """The answer to a token request; ``strict`` refuses form fields outside the spec."""
        if content_type.split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
            return error_reply(400, "the token request must be application/x-www-form-urlencoded")
        form = parse_qs(body.decode("utf-8", "replace"))
        client_id, secret, grant = (one(form, k) for k in ("client_id", "client_secret", "grant_type"))
        if not client_id or not secret:
            return error_reply(400, "client_id and client_secret are required")
        if grant not in (None, "client_credentials"):
            return error_reply(400, "unsupported grant_type")
        if grant is None and self.require_grant_type:
            return error_reply(400, "grant_type is required")
        extra = sorted(set(form) - {"client_id", "client_secret"})
        if extra and strict:
            return error_reply(400, f"unknown field(s): {', '.join(extra)}")
        id_ok = hmac.compare_digest(client_id.encode(), self.client_id.encode())
        if not (hmac.compare_digest(secret.encode(), self._client_secret.encode()) and id_ok):
            return error_reply(401, "invalid client credentials")
        token, issued = secrets.token_urlsafe(32), self._clock()
        with self._lock:
            self._live[token] = issued
            self.issued.append(token)
        created = int(issued * 1000) if self.created_ms else int(issued)
        return json_reply(
            200,
            {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": self.lifetime,
                "created_at": created,
            },
        )

    def authorized(self, authorization: Optional[str]) -> bool:
        """Whether an Authorization header carries a live bearer token."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        with self._lock:
            issued = self._live.get(token.strip())
        return issued is not None and self._clock() < issued + self.lifetime

    def revoke_all(self) -> None:
        """Every token issued so far is refused from now on; new ones work."""
        with self._lock:
            self._live.clear()
