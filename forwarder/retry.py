"""Retry timing shared by the API client and the HTTP sinks: capped exponential backoff with full
jitter, honouring a server's Retry-After."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Callable, Optional

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # total tries, the first included
    base_seconds: float = 0.5
    max_seconds: float = 30.0
    max_retry_after: float = 120.0  # a Retry-After beyond this is capped, not obeyed blindly

    def delay(
        self, attempt: int, retry_after: Optional[float] = None, rng: Callable[[], float] = random.random
    ) -> float:
        """Seconds to wait before try number ``attempt + 1`` (``attempt`` counts from 1)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        cap = min(self.max_seconds, self.base_seconds * (2 ** (attempt - 1)))
        return cap * rng()


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After as delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def sleep(seconds: float) -> None:
    """Indirection so tests can count waits without patching the time module."""
    time.sleep(seconds)
