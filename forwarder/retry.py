"""The one retry loop of the forwarder (API client, HTTP sinks, Elasticsearch items, Firehose, syslog):
capped exponential backoff with full jitter, honouring a server's Retry-After.

Every transport error is treated the same way wherever it happens: a refused or reset connection,
a timeout, a body cut mid-way (ChunkedEncodingError), a body that does not decode, a response over
its total deadline. An attempt raises :class:`TryAgain` for an answer worth another try (429, 5xx,
items refused for a passing reason); anything else it raises ends the loop at once.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from http.client import HTTPException
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

from . import causes, stop
from .logs import clip

log = logging.getLogger(__name__)
T = TypeVar("T")
Sleep = Callable[[float], None]

# requests' and urllib3's errors are OSErrors or HTTPExceptions, as are socket and TLS errors.
TRANSPORT_ERRORS = (OSError, HTTPException)

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
NOTICE_EVERY_S = 60.0  # the same retry (what, problem) is logged at WARNING at most this often


def sleep(seconds: float) -> None:
    """Wait between tries; a stop request ends the wait and abandons the work (stop.Stopped)."""
    if stop.wait(seconds):
        stop.check("a retry")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # total tries, the first included
    base_seconds: float = 0.5
    max_seconds: float = 30.0
    max_retry_after: float = 120.0  # a Retry-After beyond this is capped, not obeyed blindly
    # The wait between tries (``sleep``, which a stop request ends); tests give one that counts the
    # waits instead of waiting.
    sleep: Sleep = field(default=sleep, repr=False, compare=False)

    def wait(self, seconds: float) -> None:
        """Wait ``seconds`` before the next try (or a pause the peer asked for)."""
        self.sleep(seconds)

    def delay(
        self, attempt: int, retry_after: Optional[float] = None, rng: Callable[[], float] = random.random
    ) -> float:
        """Seconds to wait before try number ``attempt + 1`` (``attempt`` counts from 1)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        cap = min(self.max_seconds, self.base_seconds * (2 ** (attempt - 1)))
        return cap * rng()


@dataclass(frozen=True)
class Pace:
    """How a run waits and reads the time, handed from its entry point (``app.run_once``, ``check``,
    the handlers) to everything that waits or tells time: the API client's and the sink's retries,
    the rate limiter, the scheduler. The default is real time; a test hands in one that records the
    waits instead, or a clock of its own."""

    sleep: Sleep = sleep  # between tries, and before a request the rate limiter holds back
    clock: Callable[[], float] = time.monotonic  # the rate limiter's
    wall_clock: Callable[[], float] = time.time  # the scheduler's: when each stream is due

    def policy(self, attempts: int) -> RetryPolicy:
        """A retry policy of ``attempts`` tries that waits at this pace."""
        return RetryPolicy(attempts=attempts, sleep=self.sleep)


REAL_TIME = Pace()


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


class TryAgain(Exception):
    """Raised by an attempt whose answer is worth another try; ``result`` is what to give up with."""

    def __init__(self, problem: str, retry_after: Optional[float] = None, result: Any = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.retry_after = retry_after
        self.result = result


class Failure:
    """Why the last try failed: ``problem`` in words, ``attempts`` made, ``last`` TryAgain if any,
    ``cause`` when the connection failed rather than answered."""

    def __init__(
        self, problem: str, attempts: int, last: Optional[TryAgain], cause: Optional[causes.Cause] = None
    ) -> None:
        self.problem = problem
        self.attempts = attempts
        self.last = last
        self.cause = cause


_noticed: Dict[Tuple[str, str], float] = {}
_noticed_lock = threading.Lock()


def reset_notices() -> None:
    """Each run tells its retries afresh."""
    with _noticed_lock:
        _noticed.clear()


def _first_notice(what: str, problem: str) -> bool:
    """Whether the retry of ``what`` for ``problem`` was not logged at WARNING in the last minute:
    many batches or streams retrying the same failure at once tell it once."""
    now = time.monotonic()
    with _noticed_lock:
        if len(_noticed) > 1000:
            _noticed.clear()
        last = _noticed.get((what, problem))
        if last is not None and now - last < NOTICE_EVERY_S:
            return False
        _noticed[(what, problem)] = now
        return True


def call(
    policy: RetryPolicy,
    attempt: Callable[[], T],
    give_up: Callable[[Failure], T],
    what: str,
    wait: Optional[Callable[[float, Failure], None]] = None,
    where: str = "",
) -> T:
    """``attempt()`` until it returns, at most ``policy.attempts`` times; then ``give_up(failure)``
    (which raises, or returns the value to use). ``wait`` replaces the plain sleep between tries.
    ``where`` (host:port) names the peer in the cause of a transport error."""
    tries = 0
    while True:
        tries += 1
        stop.check(what)
        last: Optional[TryAgain] = None
        cause: Optional[causes.Cause] = None
        try:
            return attempt()
        except TryAgain as exc:
            last, problem, retry_after = exc, exc.problem, exc.retry_after
        except TRANSPORT_ERRORS as exc:
            cause, retry_after = causes.of(exc, where), None
            problem = cause.text
            log.debug("%s: %s", what, f"{type(exc).__name__}: {exc}")  # the library's own words
        failure = Failure(problem, tries, last, cause)
        if tries >= policy.attempts:
            return give_up(failure)
        delay = policy.delay(tries, retry_after)
        level = logging.WARNING if _first_notice(what, problem) else logging.DEBUG
        extra = {"error": clip(problem, 300), "wait_s": round(delay, 2)}
        log.log(level, "%s failed, retrying", what, extra=extra)
        if wait is None:
            policy.wait(delay)
        else:
            wait(delay, failure)
