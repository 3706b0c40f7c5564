"""Shared by the benchmarks: the fastest of several runs, the one least disturbed by the machine."""

from __future__ import annotations

import time
from typing import Callable


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
