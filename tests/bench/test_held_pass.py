"""bench/held_pass.py runs every format and its floor, each in a fresh process, and prints a row each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from forwarder.normalize import formats

BENCH = Path(__file__).resolve().parents[2] / "bench" / "held_pass.py"


def test_every_format_and_the_floor_get_a_row_with_a_ratio_to_the_floor():
    out = subprocess.run(
        [sys.executable, str(BENCH), "--records", "300", "--passes", "1"],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert sorted(rows) == sorted(["floor", *formats()])
    assert rows["floor"][2] == rows["floor"][5] == "1.0x"
    for name in formats():
        first_us, first_ratio, faults, later_us, later_ratio, rss = rows[name][1:]
        assert float(first_us) > 0 and float(later_us) > 0 and float(rss) > 0
        assert first_ratio.endswith("x") and later_ratio.endswith("x") and float(faults) >= 0
