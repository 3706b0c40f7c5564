"""Client-side limits on API requests, shared by every stream thread of a run.

* A token bucket (``FORWARDER_MAX_RPS``): requests start at most ``rate`` per second on average, in
  bursts of at most ``burst``. Unlimited by default. A run starts it from the level the last run
  left (kept in the scheduler document), not full.
* An adaptive concurrency gate: at most ``limit`` requests in flight. A 429 halves the limit (down
  to one) and pauses every new request for the wait the service asked for; each request answered
  without one adds ``1/limit`` back, so the limit regains one slot per round of requests
  (additive increase, multiplicative decrease, as TCP does).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Iterator, Optional

from .. import retry


class TokenBucket:
    def __init__(
        self,
        rate: float,
        burst: Optional[float] = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: retry.Sleep = retry.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.burst = max(1.0, burst if burst is not None else rate)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()  # _tokens and _at: every stream thread takes from one bucket
        self._tokens = self.burst
        self._at = clock()

    def level(self) -> float:
        """Tokens now (negative: requests already promised beyond the bucket)."""
        with self._lock:
            return min(self.burst, self._tokens + (self._clock() - self._at) * self.rate)

    def start_from(self, tokens: float) -> None:
        """Hold ``tokens`` now (at most a burst): what the last run left, so a run that follows another
        at once does not spend a full bucket the service has not refilled."""
        with self._lock:
            self._tokens = min(self.burst, tokens)
            self._at = self._clock()

    def take(self) -> None:
        """Wait for one token. Tokens are reserved under the lock, so waiters leave in turn."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            self._tokens -= 1
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)


class AdaptiveGate:
    """Bounds requests in flight; halves the bound on a 429 and grows it back slowly."""

    def __init__(
        self,
        maximum: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: retry.Sleep = retry.sleep,
    ) -> None:
        self.maximum = max(1, maximum)
        self.limit = float(self.maximum)
        self._in_flight = 0
        self._resume_at = 0.0
        self._clock = clock
        self._sleep = sleep
        self._cond = threading.Condition()  # _in_flight, limit, _resume_at; enter waits on it for room

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def enter(self) -> None:
        with self._cond:
            while self._in_flight >= int(self.limit):
                self._cond.wait()
            self._in_flight += 1
            delay = self._resume_at - self._clock()
        if delay > 0:
            self._sleep(delay)

    def leave(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self.limit = min(float(self.maximum), self.limit + 1 / self.limit)
            self._cond.notify_all()

    def throttled(self, wait_s: float) -> None:
        """The service answered 429: fewer requests at once, and none before ``wait_s`` passes."""
        with self._cond:
            self.limit = max(1.0, self.limit / 2)
            self._resume_at = max(self._resume_at, self._clock() + wait_s)


class RateLimiter:
    """What the API client holds: ``with limiter.request():`` around each request, and
    ``limiter.throttled(wait)`` when the service answers 429."""

    def __init__(
        self,
        max_rps: Optional[float] = None,
        concurrency: int = 64,
        clock: Callable[[], float] = time.monotonic,
        sleep: retry.Sleep = retry.sleep,
    ) -> None:
        self.bucket = TokenBucket(max_rps, clock=clock, sleep=sleep) if max_rps else None
        self.gate = AdaptiveGate(concurrency, clock=clock, sleep=sleep)

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        self.gate.enter()
        try:
            if self.bucket is not None:
                self.bucket.take()
            yield
        finally:
            self.gate.leave()

    def throttled(self, wait_s: float) -> None:
        self.gate.throttled(wait_s)
