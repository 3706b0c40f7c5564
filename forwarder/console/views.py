"""The tables a person sees: the end of a run, `state show`, `check`."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence

from ..report import RunReport
from ..timeutil import format_duration
from .style import Style
from .table import Cell, Painted, table

MAX_FAILURES_SHOWN = 20


def _lag(seconds: Optional[float]) -> str:
    return "-" if seconds is None else format_duration(seconds)


def run_summary(report: RunReport, style: Style, *, elapsed_s: float, api_calls: Optional[int]) -> str:
    """A headline, one row of totals, the failed streams with their reasons and the stalest stream."""
    totals = report.totals()
    took = format_duration(elapsed_s)
    if report.skipped:
        return style.warn(f"run skipped after {took}: {report.skipped}") + "\n"
    failed = totals["failed_streams"]
    if report.ok:
        head = style.ok("run finished") + f" in {took}"
    else:
        head = style.bad("run failed") + f" after {took}"
    out = [head + (f", {api_calls:,} API calls" if api_calls is not None else "")]
    row: List[Cell] = [
        totals["streams"],
        totals["fetched"],
        totals["new"],
        totals["shipped"],
        Painted(f"{totals['quarantined']:,}", ("yellow",)) if totals["quarantined"] else 0,
        Painted(f"{failed:,}", ("red", "bold")) if failed else 0,
    ]
    headers = ["streams", "fetched", "new", "shipped", "quarantined", "failed"]
    out.append(table(headers, [row], style, indent=2).rstrip("\n"))
    stalest = max(
        (s for s in report.streams if s.lag_seconds is not None),
        key=lambda s: s.lag_seconds or 0.0,
        default=None,
    )
    if stalest is not None:
        out.append(f"  stalest stream: {stalest.stream}, {_lag(stalest.lag_seconds)} behind")
    if report.error:
        out.append(style.bad("  error: ") + report.error)
    if report.not_started:
        out.append(style.warn(f"  {len(report.not_started):,} streams not started: they go first next run"))
    failures = [s for s in report.streams if s.error]
    if failures:
        rows: List[Sequence[Cell]] = [[s.stream, s.error or ""] for s in failures[:MAX_FAILURES_SHOWN]]
        out.append(table(["failed stream", "reason"], rows, style, indent=2).rstrip("\n"))
        if len(failures) > MAX_FAILURES_SHOWN:
            out.append(f"  ... and {len(failures) - MAX_FAILURES_SHOWN:,} more (run with --report for all)")
    return "\n".join(out) + "\n"


def stalest_first(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Streams that never delivered first, then by lag, longest first."""
    return sorted(rows, key=lambda r: (r["lag_seconds"] is not None, -(r["lag_seconds"] or 0.0)))


def state_table(location: str, rows: List[Dict[str, Any]], style: Style) -> str:
    """`state show` rows (as in its JSON form), stalest first."""
    cells: List[Sequence[Cell]] = [
        [
            r["stream"],
            Painted("never", ("yellow",)) if r["watermark"] is None else r["watermark"][:19] + "Z",
            _lag(r["lag_seconds"]),
            r["ids_in_window"],
            r["delivered_total"],
        ]
        for r in stalest_first(rows)
    ]
    headers = ["stream", "watermark", "lag", "ids in window", "delivered"]
    head = f"{location}: {len(rows):,} streams, stalest first\n"
    return head + (table(headers, cells, style) if rows else "  (no state yet)\n")


# `check` prints 'ok   step: detail' / 'FAIL step: detail'; a step is a word or two before ': '.
_CHECK_LINE = re.compile(r"^(ok  |FAIL) (?:([\w/.-]+(?: \S+)?): )?(.*)$")


def check_view(lines: str, style: Style) -> str:
    """`check`'s machine form (its lines) as a table: status, step, result. A line of another shape
    is kept as it is, under the table."""
    rows: List[Sequence[Cell]] = []
    other: List[str] = []
    for line in lines.splitlines():
        m = _CHECK_LINE.match(line)
        if not m:
            other.append(line)
            continue
        status = Painted("ok", ("green",)) if m.group(1) == "ok  " else Painted("FAIL", ("red", "bold"))
        rows.append([status, m.group(2) or "", m.group(3)])
    return table(["", "step", "result"], rows, style) + "".join(line + "\n" for line in other)
