"""The tables a person sees: the end of a run, `state show`, `check`."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence

from ..report import RunReport, which_streams
from ..timeutil import format_duration
from .style import Style
from .table import Cell, Painted, table

MAX_FAILURES_SHOWN = 20


def _lag(seconds: Optional[float]) -> str:
    return "-" if seconds is None else format_duration(seconds)


TOTALS = ["streams", "fetched", "new", "shipped", "quarantined", "failed"]


def _totals_row(report: RunReport) -> List[Cell]:
    """The summary's numbers, under ``TOTALS``."""
    totals = report.totals()
    failed = totals["failed_streams"]
    return [
        totals["streams"],
        totals["fetched"],
        totals["new"],
        totals["shipped"],
        Painted(f"{totals['quarantined']:,}", ("yellow",)) if totals["quarantined"] else 0,
        Painted(f"{failed:,}", ("red", "bold")) if failed else 0,
    ]


def _headline(report: RunReport, style: Style, took: str) -> str:
    if report.skip_reason:
        return style.warn(f"run skipped after {took}: {report.skip_reason}")
    if report.ok:
        return style.ok("run finished") + f" in {took}"
    return style.bad("run failed") + f" after {took}"


def run_summary(
    report: RunReport, style: Style, *, elapsed_s: float, api_calls: Optional[int], tenant: str = ""
) -> str:
    """A headline, one row of totals, the failed streams with their reasons and the stalest stream;
    the headline names ``tenant`` when there is one."""
    named = f"tenant {tenant}: " if tenant else ""
    head = named + _headline(report, style, format_duration(elapsed_s))
    if report.skip_reason:
        return head + "\n"
    out = [head + (f", {api_calls:,} API calls" if api_calls is not None else "")]
    out.append(table(TOTALS, [_totals_row(report)], style, indent=2).rstrip("\n"))
    stalest = max(
        (s for s in report.streams if s.lag_seconds is not None),
        key=lambda s: s.lag_seconds or 0.0,
        default=None,
    )
    if stalest is not None:
        # The lag is the age of the newest record delivered: a quiet user's stream is old, not late.
        out.append(
            f"  stalest stream: {stalest.stream}, newest record {_lag(stalest.lag_seconds)} old "
            "(normal for a stream with no recent activity)"
        )
    if report.error:
        out.append(style.bad("  error: ") + report.error)
    if report.not_started:
        why = f" ({report.stop_reason})" if report.stop_reason else ""
        left = f"  {len(report.not_started):,} streams not started{why}: they go first next run"
        out.append(style.warn(left))
    if report.not_due:
        out.append(f"  {len(report.not_due):,} streams not due: quiet, they wait their turn")
    failures = report.failures()
    if failures:
        rows: List[Sequence[Cell]] = [
            [which_streams(streams), error] for error, streams in failures[:MAX_FAILURES_SHOWN]
        ]
        out.append(table(["failed stream", "reason"], rows, style, indent=2).rstrip("\n"))
        if len(failures) > MAX_FAILURES_SHOWN:
            more = len(failures) - MAX_FAILURES_SHOWN
            out.append(f"  ... and {more:,} more reasons (run with --report for all)")
    return "\n".join(out) + "\n"


def tenants_total(
    reports: Dict[str, RunReport], style: Style, *, elapsed_s: float, api_calls: Optional[int]
) -> str:
    """After every tenant's own summary: one row per tenant and their total."""
    failed = [name for name, r in reports.items() if not r.ok]
    skipped = [name for name, r in reports.items() if r.skip_reason]
    calls = f", {api_calls:,} API calls" if api_calls is not None else ""
    head = f"{len(reports):,} tenants in {format_duration(elapsed_s)}{calls}: "
    parts = [style.ok(f"{len(reports) - len(failed) - len(skipped):,} finished")]
    parts += [style.bad(f"{len(failed):,} failed ({', '.join(failed)})")] if failed else []
    parts += [style.warn(f"{len(skipped):,} skipped ({', '.join(skipped)})")] if skipped else []
    rows: List[Sequence[Cell]] = [[name, *_totals_row(r)] for name, r in reports.items()]
    total = RunReport(started="", streams=[s for r in reports.values() for s in r.streams])
    rows.append([Painted("total", ("bold",)), *_totals_row(total)])
    return head + ", ".join(parts) + "\n" + table(["tenant", *TOTALS], rows, style, indent=2)


def stalest_first(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Streams that never delivered first, then by lag, longest first."""
    return sorted(rows, key=lambda r: (r["lag_seconds"] is not None, -(r["lag_seconds"] or 0.0)))


def state_table(location: str, rows: List[Dict[str, Any]], style: Style) -> str:
    """`state show` rows (as in its JSON form), stalest first."""
    cells: List[Sequence[Cell]] = [
        [
            f"{r['stream']} (org-wide)" if r.get("org_wide") else r["stream"],
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
_CHECK_LINE = re.compile(r"^(ok  |FAIL|warn) (?:([\w/.-]+(?: \S+)?): )?(.*)$")
_CHECK_STATUS = {
    "ok  ": Painted("ok", ("green",)),
    "FAIL": Painted("FAIL", ("red", "bold")),
    "warn": Painted("warn", ("yellow",)),
}


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
        rows.append([_CHECK_STATUS[m.group(1)], m.group(2) or "", m.group(3)])
    return table(["", "step", "result"], rows, style) + "".join(line + "\n" for line in other)
