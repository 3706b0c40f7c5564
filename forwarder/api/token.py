"""Access-token lifecycle: fetch, cache until expiry minus a margin, refresh on demand."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

from ..errors import AuthError, MalformedResponse
from ..logs import register_secrets

DEFAULT_LIFETIME = 14400
_MS_THRESHOLD = 100_000_000_000  # a created_at above this is milliseconds (year 5138 in seconds)


@dataclass
class Token:
    value: str = field(repr=False)
    expires_at: float  # local clock

    def __repr__(self) -> str:
        return f"Token(expires_at={self.expires_at:.0f})"


def parse_token(body: Any, received_at: float) -> Token:
    """Turn a token response into a Token whose expiry is on the local clock.

    The server's created_at (seconds or milliseconds) only ever shortens the lifetime, so a server
    clock ahead of ours cannot make us keep a token longer than it lives.
    """
    if (
        not isinstance(body, dict)
        or not isinstance(body.get("access_token"), str)
        or not body["access_token"]
    ):
        raise MalformedResponse("token response has no access_token string")
    lifetime = body.get("expires_in", DEFAULT_LIFETIME)
    if not isinstance(lifetime, (int, float)) or isinstance(lifetime, bool) or lifetime <= 0:
        lifetime = DEFAULT_LIFETIME
    created = body.get("created_at")
    remaining = float(lifetime)
    if isinstance(created, (int, float)) and not isinstance(created, bool) and created > 0:
        created_s = created / 1000.0 if created > _MS_THRESHOLD else float(created)
        by_server = created_s + lifetime - received_at
        # A server clock far behind ours would make every token look expired: distrust it then.
        if by_server > 60:
            remaining = min(remaining, by_server)
    margin = min(300.0, remaining / 10)
    return Token(value=body["access_token"], expires_at=received_at + remaining - margin)


# Tokens outlive a run (4 hours): later runs in the same process (``run --interval``, a warm Lambda)
# reuse them instead of asking the token endpoint every few minutes. Keyed by a hash that includes
# the secret, so a rotated secret never reuses a token; one entry per credential.
_reusable: Dict[str, Token] = {}
_reusable_lock = threading.Lock()  # _reusable: providers of concurrent runs (tenants) share it


def reuse_key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


class TokenProvider:
    """Thread-safe token cache. ``fetch`` performs the token request and returns the parsed body."""

    def __init__(
        self, fetch: Callable[[], Any], clock: Callable[[], float] = time.time, key: Optional[str] = None
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        # Held across the token request: threads that find the token expired (or refused) wait for
        # one new token instead of each asking the token endpoint.
        self._lock = threading.Lock()
        self._key = key
        with _reusable_lock:
            self._token: Optional[Token] = _reusable.get(key) if key else None

    def get(self) -> str:
        with self._lock:
            if self._token is None or self._clock() >= self._token.expires_at:
                self._token = self._new_token()
            return self._token.value

    def refresh(self, rejected: str) -> str:
        """A call with ``rejected`` got 401: replace it, unless another thread already did."""
        with self._lock:
            if self._token is None or self._token.value == rejected:
                self._token = self._new_token()
            return self._token.value

    def _new_token(self) -> Token:
        received = self._clock()
        token = parse_token(self._fetch(), received)
        if not token.value:
            raise AuthError("token endpoint returned an empty token")
        register_secrets([token.value])  # an error body or a log line may quote it
        if self._key:
            with _reusable_lock:
                _reusable[self._key] = token
        return token
