"""Shared by the benchmarks: the fastest of several runs, the one least disturbed by the machine;
and the median of several (floor, run) pairs measured back to back, for a ratio to a floor."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

T = TypeVar("T")

PAIRS = 3  # back-to-back (floor, run) pairs per timed case, unless --pairs says otherwise


def best_of(repeat: int, fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds by ``clock``: wall time by default; CPU time (``time.process_time``) for pure
    computation, which other processes on a shared machine then disturb much less."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


@dataclass
class Pair(Generic[T]):
    """A floor and a run measured back to back (the machine's load changes between pairs)."""

    floor_s: float
    run_s: float
    run: T  # what else the run measured: its report, its counts

    @property
    def ratio(self) -> float:
        return self.run_s / self.floor_s


def median_pair(pairs: Sequence[Pair[T]]) -> Pair[T]:
    """The pair whose ratio is the median, the lower middle one for an even count. Every timed case
    reports it: the best pair flatters whichever side the machine's load hit less."""
    ranked = sorted(pairs, key=lambda pair: pair.ratio)
    return ranked[(len(ranked) - 1) // 2]


def spread(pairs: Sequence[Pair[T]]) -> str:
    """Every pair's ratio, lowest first, after the range: what the median was taken from."""
    ranked = sorted(pair.ratio for pair in pairs)
    every = " ".join(f"{ratio:.2f}x" for ratio in ranked)
    return f"median of {len(ranked)} back-to-back pairs, range {ranked[0]:.2f}-{ranked[-1]:.2f}x: {every}"
