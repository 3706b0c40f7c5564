"""A server-side rate limit for the simulated API: a token bucket that answers 429 with
``Retry-After`` to every request past ``rate`` per second (in bursts of at most ``rate``), as a
rate-limited service does. Every request counts, the token endpoint's included; a refused request
takes no token."""

from __future__ import annotations

import math
import threading
import time
from typing import Callable, Optional


class ServerBucket:
    def __init__(self, rate: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.burst = max(1.0, rate)
        self.refused = 0  # requests answered 429
        self._clock = clock
        self._lock = threading.Lock()  # _tokens, _at and refused: handler threads take at once
        self._tokens = self.burst
        self._at = clock()

    def admit(self) -> Optional[int]:
        """None when the request may go on; else the whole seconds to wait (the 429's Retry-After)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return None
            self.refused += 1
            return max(1, math.ceil((1 - self._tokens) / self.rate))
