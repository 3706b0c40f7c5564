"""The live progress line of a run: counters fed by the run's observer hook, drawn by a ticker thread
a few times a second, so the stream threads only update numbers and never wait on the terminal."""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..observer import RunObserver
from ..report import StreamReport
from ..streams import Stream
from ..timeutil import format_duration, now_us
from .screen import Screen

BACKFILL_US = 86400 * 1_000_000  # a stream starting more than a day behind is catching up


class Ticker:
    """Draws ``frame()`` on the screen's status line a few times a second, from its own thread."""

    def __init__(self, screen: Screen, interval_s: float, clock: Callable[[], float]) -> None:
        self.screen = screen
        self.interval_s = interval_s
        self.clock = clock
        self.began = clock()
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    def frame(self) -> str:
        raise NotImplementedError

    def elapsed(self) -> float:
        return self.clock() - self.began

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


class Progress(Ticker, RunObserver):
    def __init__(
        self, screen: Screen, interval_s: float = 0.25, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(screen, interval_s, clock)
        self._lock = threading.Lock()  # the counts below: stream threads update them, the ticker reads
        self._planned: Optional[int] = None
        self._api_calls: Callable[[], int] = lambda: 0
        self._reports: Dict[str, StreamReport] = {}
        self._shipped: Dict[str, int] = {}  # stream -> records the sink accepted, told as it happens
        self._spans: Dict[str, Tuple[int, int]] = {}  # running stream -> (first_us, delivered up to)
        self._done = 0
        self._failed = 0
        self._backfill = False

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

    def shipped(self, stream: str, count: int) -> None:
        with self._lock:
            self._shipped[stream] = self._shipped.get(stream, 0) + count

    def finished(self, report: StreamReport) -> None:
        with self._lock:
            self._reports[report.stream] = report
            self._spans.pop(report.stream, None)
            self._done += 1
            self._failed += 0 if report.ok else 1

    def api_calls(self) -> Optional[int]:
        """API requests made so far, or None before the run planned its streams."""
        with self._lock:
            planned, count = self._planned, self._api_calls
        return None if planned is None else count()

    def counts(self) -> Counts:
        """The run's numbers as they stand (planned None: still planning)."""
        with self._lock:
            reports = list(self._reports.values())
            told = dict(self._shipped)
            planned, done, failed, api_calls = self._planned, self._done, self._failed, self._api_calls
        fetched = sum(r.fetched for r in reports)
        # A report has its shipped count once the run's batches are settled; until then, what was told.
        shipped = sum(told.get(r.stream, r.shipped) for r in reports)
        return Counts(planned, done, failed, fetched, shipped, api_calls() if planned is not None else 0)

    # -- drawing (the ticker thread) ---------------------------------------------------------------

    def frame(self) -> str:
        """The progress line as it stands."""
        elapsed = self.elapsed()
        counts = self.counts()
        with self._lock:
            spans = list(self._spans.values())
            backfill = self._backfill
        clock = format_duration(elapsed)
        if counts.planned is None:
            return f"planning: listing users and domains  {clock}"
        parts = _parts(counts, elapsed)
        if backfill and counts.done < counts.planned:
            parts.append(_left(elapsed, _covered(counts.planned, counts.done, spans)))
        parts.append(clock)
        return "  ".join(p for p in parts if p)


class TenantsProgress(Ticker):
    """The live line while tenants run side by side: every tenant's numbers added up. Each tenant's
    run has its own ``Progress`` (``add``), which counts and never draws."""

    def __init__(
        self,
        screen: Screen,
        count: int,
        interval_s: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(screen, interval_s, clock)
        self.count = count
        self._lock = threading.Lock()  # tenants: each tenant's thread adds its own, the ticker reads
        self.tenants: Dict[str, Progress] = {}

    def add(self, name: str) -> Progress:
        progress = Progress(self.screen, self.interval_s, self.clock)
        with self._lock:
            self.tenants[name] = progress
        return progress

    def frame(self) -> str:
        with self._lock:
            runs = [p.counts() for p in self.tenants.values()]
        planned = [c for c in runs if c.planned is not None]
        total = Counts(
            sum(c.planned or 0 for c in planned),
            sum(c.done for c in runs),
            sum(c.failed for c in runs),
            sum(c.fetched for c in runs),
            sum(c.shipped for c in runs),
            sum(c.api_calls for c in runs),
        )
        elapsed = self.elapsed()
        planning = len(runs) - len(planned)
        head = f"tenants {len(runs)}/{self.count} started" + (f", {planning} planning" if planning else "")
        return "  ".join([head, *(p for p in _parts(total, elapsed) if p), format_duration(elapsed)])


class Counts(NamedTuple):
    planned: Optional[int]
    done: int
    failed: int
    fetched: int
    shipped: int
    api_calls: int


def _parts(counts: Counts, elapsed: float) -> List[str]:
    return [
        f"streams {counts.done}/{counts.planned}",
        f"fetched {counts.fetched:,}",
        f"shipped {counts.shipped:,}",
        f"{counts.fetched / elapsed:,.0f} records/s" if elapsed > 0 else "",
        f"API calls {counts.api_calls:,}",
        f"failed {counts.failed}" if counts.failed else "",
    ]


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
