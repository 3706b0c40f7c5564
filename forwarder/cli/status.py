"""Exit statuses of the audit-forwarder command."""

from __future__ import annotations

from typing import List

from ..report import RunReport

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2
EXIT_QUARANTINED = 3  # the run completed, but put events or records in quarantine
EXIT_FUTURE = 4  # the run completed, but shipped records dated in the future (a peer's clock)
EXIT_TEMPFAIL = 75  # sysexits EX_TEMPFAIL: another run holds the lease; try again later


def run_status(report: RunReport) -> int:
    """The exit status of one run: the most serious of what happened."""
    totals = report.totals()
    if report.skip_reason:
        return EXIT_TEMPFAIL
    if not report.ok:
        return EXIT_FAILED
    if totals["quarantined"]:
        return EXIT_QUARANTINED
    return EXIT_FUTURE if totals["future"] else EXIT_OK


def worst(codes: List[int]) -> int:
    """One status for several runs (tenants): a failure first, then a held lease, then the highest."""
    return max(codes, key=lambda c: (c == EXIT_FAILED, c == EXIT_TEMPFAIL, c)) if codes else EXIT_OK
