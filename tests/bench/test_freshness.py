"""bench/freshness.py's own accounting, on its smoke-test size: every measured record is accounted
for on both sides, every run started is counted once by how it ended, and the per-run figures are
the counts they are made of (counts only: the seconds depend on the machine)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "freshness.py"


def _line(pattern: str, out: str) -> re.Match:
    found = re.search(pattern, out, re.M)
    assert found, f"no line matching {pattern!r} in:\n{out}"
    return found


def test_quick_run_accounts_for_every_record_run_and_call():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert out.startswith("== 20 streams (8 users, 12 domains): FORWARDER_MAX_RPS=20, a run every 2 s")
    warmup = _line(
        r"^warm-up, excluded from the figures below: (\d+) s: start-up \(until every stream was asked for\) "
        r"(\d+) s in (\d+) runs \(the first took \S+ s, exit 0\), then 4 s settling$",
        out,
    )
    assert int(warmup[1]) >= int(warmup[2]) + 4 - 1 and int(warmup[3]) >= 1  # whole seconds, rounded
    created = int(_line(r"^measured span: 6 s, records created: (\d+) \(\d+ DMARC changes\)$", out)[1])
    assert created > 0
    runs = {}
    for side in ("forwarder", "oracle"):
        figures = _line(
            rf"^{side}: delivered (\d+) of (\d+), p95 lag .*, API calls (\d+) in (\d+) runs = (\S+) per run, "
            r"429s seen (\d+)$",
            out,
        )
        delivered, of, calls, runs[side] = (int(figures[i]) for i in range(1, 5))
        assert delivered == of == created
        assert figures[5] == f"{calls / runs[side]:.1f}"
        runs[side + " calls"] = calls
    assert runs["forwarder"] == runs["oracle"] > 0  # the same ticks
    split = _line(r"^forwarder calls by kind: (.*)$", out)[1]
    kinds = {name: int(n) for name, n in (part.rsplit(" ", 1) for part in split.split(", "))}
    assert sum(kinds.values()) == runs["forwarder calls"]
    # the users list is cached in the scheduler document (FORWARDER_USERS_CACHE): the warm-up listed it
    assert kinds["audits user"] > 0 and "users" not in kinds
    started = _line(
        r"^runs started in the span: (\d+): (\d+) completed, (\d+) skipped \(lease held, exit 75\), "
        r"(\d+) failed, (\d+) cut at the end$",
        out,
    )
    total, completed, skipped, failed, cut = map(int, started.groups())
    assert total == runs["forwarder"] == completed + skipped + failed + cut and failed == 0
    ratio = _line(r"^API calls per run / oracle's: (\S+)x$", out)[1]
    assert ratio == f"{runs['forwarder calls'] / runs['oracle calls']:.2f}"
    # the 2 s schedule: user streams within 12 s, domain streams within 144 s (the seconds are not checked)
    _line(
        r"^longest wait between two polls of a stream in the span: user streams \d+\.\d s "
        r"\(FORWARDER_COLD_REVISIT: 12 s by default\), domain streams \d+\.\d s "
        r"\(FORWARDER_DOMAIN_REVISIT: 144 s by default\)$",
        out,
    )
    whole = _line(r"^whole bench: audit records fetched (\d+) to ship (\d+) of the (\d+) records created; "
                  r"events delivered twice (\d+)$", out)  # fmt: skip
    assert int(whole[2]) == int(whole[3]) >= created and int(whole[4]) == 0
    assert int(whole[1]) >= int(whole[2])  # each record shipped was fetched at least once


def test_bad_options_are_refused():
    done = subprocess.run([sys.executable, str(BENCH), "--streams", "5"], capture_output=True, text=True)
    assert done.returncode == 2 and "at least 10 streams" in done.stderr
