"""bench/shallow_streams.py and the pair helpers it shares with bench/backlog.py: the wall ratio is
the median of ``--pairs`` back-to-back (floor, run) pairs, and the counts stay each run's own."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _timing():
    spec = importlib.util.spec_from_file_location("bench_timing", BENCH / "timing.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("ratios", "median"),
    [([3.0, 1.0, 2.0], 2.0), ([4.0, 1.0, 3.0, 2.0], 2.0), ([5.0], 5.0), ([2.0, 2.0, 9.0], 2.0)],
)
def test_the_median_pair_is_the_middle_ratio_not_the_best(ratios, median):
    timing = _timing()
    # The same run time against different floors: the ratio is what ranks a pair, not either side.
    pairs = [timing.Pair(1.0 / ratio, 1.0, index) for index, ratio in enumerate(ratios)]
    assert timing.median_pair(pairs).ratio == pytest.approx(median)
    low, high = min(ratios), max(ratios)
    every = " ".join(f"{r:.2f}x" for r in sorted(ratios))
    assert timing.spread(pairs) == (
        f"median of {len(ratios)} back-to-back pairs, range {low:.2f}-{high:.2f}x: {every}"
    )


def _bench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH / "shallow_streams.py"), "--users", "30", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("pairs", [1, 3])
def test_shallow_streams_reports_the_median_pair_and_exact_counts(pairs):
    out = _bench("--pairs", str(pairs))
    assert f"events shipped: 90 (expected 90), {pairs} runs from an empty state" in out
    # Every run makes the same requests: plain counts, no "most of" range.
    posts = re.search(r"^HEC requests: (\d+), minimum ceil\(events/500\) = (\d+)$", out, re.M)
    assert posts and int(posts[2]) == 1 and 1 <= int(posts[1]) <= 1 + 5
    calls = re.search(r"^API calls: (\d+) \(", out, re.M)
    floor = re.search(r"^minimum API calls .*: (\d+)$", out, re.M)
    assert calls and floor and int(calls[1]) == int(floor[1]) == 1 + 1 + 30  # token, users, a GET each
    wall = re.search(
        r"^wall / floor: (\S+)x \(median of (\d+) back-to-back pairs, range (\S+)-(\S+)x: (.*)\)$", out, re.M
    )
    assert wall, out
    every = [float(r.rstrip("x")) for r in wall[5].split()]
    assert int(wall[2]) == len(every) == pairs
    assert every == sorted(every) and (float(wall[3]), float(wall[4])) == (every[0], every[-1])
    assert float(wall[1]) == every[(pairs - 1) // 2]
    # One batch: one commit per stream, and the delivered-ids index written once, before them.
    writes = re.search(
        r"^state writes .*: (\d+) stream commits; the delivered-ids index (\d+) writes", out, re.M
    )
    assert writes and (int(writes[1]), int(writes[2])) == (30, 1), out


def test_shallow_streams_refuses_no_pairs():
    done = subprocess.run(
        [sys.executable, str(BENCH / "shallow_streams.py"), "--pairs", "0"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--pairs must be at least 1" in done.stderr
