"""Access-token lifecycle: fetch, cache until expiry minus a margin, refresh on demand."""

from __future__ import annotations

import copy
import hashlib
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

from ..errors import ApiError, AuthError, MalformedResponse
from ..logs import register_tokens

DEFAULT_LIFETIME = 14400
_MS_THRESHOLD = 100_000_000_000  # a created_at above this is milliseconds (year 5138 in seconds)


def token_endpoint(url: str = "") -> str:
    """What messages call the token endpoint at ``url``: by the settings that make its address."""
    return f"the token endpoint{' ' + url if url else ''} (FORWARDER_API_URL, FORWARDER_TOKEN_PATH)"


# RFC 6750's b64token, what an Authorization: Bearer header may carry. Anything else (CR LF, a
# space, a quote, a character outside Latin-1) would break the header or hide in an escaped form in
# an error: refused on receipt, never sent.
_B64TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")


@dataclass
class Token:
    value: str = field(repr=False)
    expires_at: float  # local clock

    def __repr__(self) -> str:
        return f"Token(expires_at={self.expires_at:.0f})"


def parse_token(body: Any, received_at: float, endpoint: str = token_endpoint()) -> Token:
    """Turn a token response from ``endpoint`` into a Token whose expiry is on the local clock.

    The server's created_at (seconds or milliseconds) only ever shortens the lifetime, so a server
    clock ahead of ours cannot make us keep a token longer than it lives.
    """
    if (
        not isinstance(body, dict)
        or not isinstance(body.get("access_token"), str)
        or not body["access_token"]
    ):
        raise MalformedResponse(f"{endpoint} answered no access_token string")
    if not _B64TOKEN.fullmatch(body["access_token"]):  # never quoted: it is a secret
        raise MalformedResponse(
            f"{endpoint} answered an access_token with characters a bearer token cannot hold "
            "(RFC 6750 allows A-Z a-z 0-9 - . _ ~ + / and trailing =): refused"
        )
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
    """Thread-safe token cache of one run. ``fetch`` performs the token request (``endpoint``, for
    messages) and returns the parsed body.

    One token request at a time, and one failure per run: once the request failed (after its own
    retries), every later caller gets that error at once. Twenty streams that each waited out an
    endpoint that never answers took twenty times the timeout and the attempts."""

    def __init__(
        self,
        fetch: Callable[[], Any],
        clock: Callable[[], float] = time.time,
        key: Optional[str] = None,
        endpoint: str = token_endpoint(),
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._endpoint = endpoint
        # Held across the token request: threads that find the token expired (or refused) wait for
        # one new token instead of each asking the token endpoint.
        self._lock = threading.Lock()
        self._key = key
        self._failure: Optional[ApiError] = None
        with _reusable_lock:
            self._token: Optional[Token] = _reusable.get(key) if key else None

    def get(self) -> str:
        with self._lock:
            if self._token is None or self._clock() >= self._token.expires_at:
                self._token = self._new_token()
            return self._handed_out(self._token)

    def refresh(self, rejected: str) -> str:
        """A call with ``rejected`` got 401: replace it, unless another thread already did."""
        with self._lock:
            if self._token is None or self._token.value == rejected:
                self._token = self._new_token()
            return self._handed_out(self._token)

    @staticmethod
    def _handed_out(token: Token) -> str:
        # Masked while in use: the registry keeps the tokens most recently handed out (logs.Secrets),
        # and one reused from an earlier run may have been dropped since.
        register_tokens([token.value])
        return token.value

    def _new_token(self) -> Token:
        if self._failure is not None:
            raise copy.copy(self._failure)  # a copy: each thread's traceback is its own
        try:
            return self._fetched()
        except ApiError as exc:
            self._failure = exc
            raise

    def _fetched(self) -> Token:
        received = self._clock()
        token = parse_token(self._fetch(), received, self._endpoint)
        if not token.value:
            raise AuthError("token endpoint returned an empty token")
        register_tokens([token.value])  # an error body or a log line may quote it
        if self._key:
            with _reusable_lock:
                _reusable[self._key] = token
        return token
