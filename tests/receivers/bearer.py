"""The access tokens a loopback identity provider issued (Entra ID's, Google's): each lives a number of
seconds from its issue, and a test may revoke them all. Shared by the fakes that issue and check them."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Dict, List


class BearerTokens:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expiry: Dict[str, float] = {}  # token -> expiry (monotonic)

    def issue(self, prefix: str, seconds: float) -> str:
        token = prefix + secrets.token_urlsafe(40)
        with self._lock:
            self._expiry[token] = time.monotonic() + seconds
        return token

    def live(self, token: str) -> bool:
        """Issued, not revoked, not expired."""
        with self._lock:
            expiry = self._expiry.get(token)
        return expiry is not None and time.monotonic() < expiry

    def revoke(self) -> None:
        """Every token issued so far is refused from now on."""
        with self._lock:
            self._expiry.clear()

    def issued(self) -> List[str]:
        with self._lock:
            return list(self._expiry)
