"""Shared by the benchmarks: the fastest of several runs, the one least disturbed by the machine."""

from __future__ import annotations

import time
from typing import Callable


def best_of(repeat: int, fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds by ``clock``: wall time by default; CPU time (``time.process_time``) for pure
    computation, which other processes on a shared machine then disturb much less."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)
