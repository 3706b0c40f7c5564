"""The live progress line of a run: counters fed by the run's observer hook, drawn by a ticker thread
a few times a second, so the stream threads only update numbers and never wait on the terminal."""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, Optional, Sequence, Tuple

from ..observer import RunObserver
from ..report import StreamReport
from ..streams import Stream
from ..timeutil import format_duration, now_us
from .screen import Screen

BACKFILL_US = 86400 * 1_000_000  # a stream starting more than a day behind is catching up


class Progress(RunObserver):
    def __init__(
        self, screen: Screen, interval_s: float = 0.25, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.screen = screen
        self.interval_s = interval_s
        self.clock = clock
        self.began = clock()
        self._lock = threading.Lock()  # the counts below: stream threads update them, the ticker reads
        self._planned: Optional[int] = None
        self._api_calls: Callable[[], int] = lambda: 0
        self._reports: Dict[str, StreamReport] = {}
        self._spans: Dict[str, Tuple[int, int]] = {}  # running stream -> (first_us, delivered up to)
        self._done = 0
        self._failed = 0
        self._backfill = False
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    # -- the run's hook (stream threads) -----------------------------------------------------------

    def started(self, plan: Sequence[Stream], api_calls: Callable[[], int]) -> None:
        with self._lock:
            self._planned = len(plan)
            self._api_calls = api_calls

    def progressed(self, report: StreamReport, first_us: int, at_us: int) -> None:
        with self._lock:
            self._reports[report.stream] = report
            self._spans[report.stream] = (first_us, at_us)
            self._backfill = self._backfill or now_us() - first_us > BACKFILL_US

    def finished(self, report: StreamReport) -> None:
        with self._lock:
            self._reports[report.stream] = report
            self._spans.pop(report.stream, None)
            self._done += 1
            self._failed += 0 if report.ok else 1

    def elapsed(self) -> float:
        return self.clock() - self.began

    def api_calls(self) -> Optional[int]:
        """API requests made so far, or None before the run planned its streams."""
        with self._lock:
            planned, count = self._planned, self._api_calls
        return None if planned is None else count()

    # -- drawing (the ticker thread) ---------------------------------------------------------------

    def start(self) -> None:
        self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
        self._ticker.start()

    def stop(self) -> None:
        """Stop drawing and take the line away: the summary follows."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        self.screen.clear()

    def _tick(self) -> None:
        while True:
            self.screen.status(self.frame())
            if self._stop.wait(self.interval_s):
                return

    def frame(self) -> str:
        """The progress line as it stands."""
        elapsed = self.elapsed()
        with self._lock:
            planned, done, failed = self._planned, self._done, self._failed
            reports = list(self._reports.values())
            spans = list(self._spans.values())
            backfill = self._backfill
            api_calls = self._api_calls
        clock = format_duration(elapsed)
        if planned is None:
            return f"planning: listing users and domains  {clock}"
        fetched = sum(r.fetched for r in reports)
        shipped = sum(r.shipped for r in reports)
        parts = [
            f"streams {done}/{planned}",
            f"fetched {fetched:,}",
            f"shipped {shipped:,}",
            f"{fetched / elapsed:,.0f} records/s" if elapsed > 0 else "",
            f"API calls {api_calls():,}",
            f"failed {failed}" if failed else "",
        ]
        if backfill and done < planned:
            parts.append(_left(elapsed, _covered(planned, done, spans)))
        parts.append(clock)
        return "  ".join(p for p in parts if p)


def _covered(planned: int, done: int, spans: Sequence[Tuple[int, int]]) -> float:
    """The share of the run's time ranges behind it: finished streams count whole, running ones by
    how far their delivered position has moved from where they started towards now."""
    if not planned:
        return 1.0
    now = now_us()
    partial = sum(min(1.0, max(0.0, (at - first) / (now - first))) for first, at in spans if now > first)
    return (done + partial) / planned


def _left(elapsed: float, covered: float) -> str:
    if covered <= 0 or elapsed < 1:
        return "estimating time left"
    return f"~{format_duration(elapsed * (1 - covered) / covered)} left"
