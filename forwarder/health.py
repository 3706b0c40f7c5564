"""The forwarder's own health: one summary per run, sent through the run's sink after it (DESIGN §3).

The summary is built from the run report alone (pure), so it says what the run did and never moves
state; ``normalize/health.py`` shapes it in the chosen format. It carries no secret: counts, times,
the stop reason and the run's error (masked and cut, as every message is), the tenant's name and an
id of the forwarder, a hash of where its state lives (stable across runs and runtimes, so a SIEM
can tell one forwarder's runs apart from another's and notice when one goes silent).

Lag, two ways, in whole seconds: ``oldest_watermark_seconds`` is the stalest stream's watermark age
(now minus its newest delivered record: large for a quiet user too), ``behind_seconds`` the same over
the streams that did not read up to the present this run (cut short by a page cap, the run's budget
or deadline, a stop or a failure), 0 when every stream polled caught up: how far behind the
forwarder really is, what a lag rule reads.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Dict, Optional

from . import __version__
from .logs import clip
from .report import RunReport
from .timeutil import parse_iso

SCHEMA = 1
DATASET = "emailauth.forwarder.health"
SUCCESS, FAILURE, SKIPPED, STOPPED = "success", "failure", "skipped", "stopped"
ERROR_LIMIT = 1000  # characters of the run's error the event quotes


@dataclass(frozen=True)
class Origin:
    """Who ran: the same for every run of one forwarder (but ``runtime`` when it moves)."""

    runtime: str  # cli, lambda, lambda-worker, splunk
    tenant: str  # the tenant's name, "" for a single organization
    forwarder_id: str  # forwarder_id(): the state location and tenant, hashed
    schedule_interval_s: int  # how often runs start: the silence rule's unit
    version: str = __version__


def forwarder_id(state_location: str, tenant: str) -> str:
    """16 hex digits naming one forwarder: two forwarders never share a state location (the lease)."""
    return hashlib.sha256(f"{state_location}\0{tenant}".encode()).hexdigest()[:16]


def status_of(report: RunReport, stopped: bool) -> str:
    if report.skip_reason:
        return SKIPPED
    if not report.ok:
        return FAILURE
    if stopped or any(s.stopped for s in report.streams):
        return STOPPED
    return SUCCESS


def summary(report: RunReport, origin: Origin, run_id: str, stopped: bool) -> Dict[str, Any]:
    """The health of the run ``report`` tells, as plain JSON values (``normalize/health.py``)."""
    totals = report.totals()
    streams = report.streams
    behind = [
        round(s.lag_seconds)
        for s in streams
        if s.lag_seconds is not None and (s.truncated or s.unfinished or s.stopped or not s.ok)
    ]
    oldest = totals["max_lag_seconds"]
    started_us = parse_iso(report.started)
    finished_us = parse_iso(report.finished or report.started)
    error: Optional[str] = report.error or (report.failure_lines()[0] if report.failures() else None)
    health = {
        "schema": SCHEMA,
        "run_id": run_id,
        "forwarder_id": origin.forwarder_id,
        "tenant": origin.tenant,
        "runtime": origin.runtime,
        "version": origin.version,
        "status": status_of(report, stopped),
        "started": report.started,
        "finished": report.finished or report.started,
        "duration_seconds": round(max(0, finished_us - started_us) / 1e6, 3),
        "schedule_interval_seconds": origin.schedule_interval_s,
        "error": clip(error, ERROR_LIMIT) if error else None,
        "skipped_reason": clip(report.skip_reason, ERROR_LIMIT) if report.skip_reason else None,
        "stop_reason": report.stop_reason,
        "streams": {
            "polled": len(streams),
            "failed": totals["failed_streams"],
            "stopped": sum(1 for s in streams if s.stopped),
            "truncated": sum(1 for s in streams if s.truncated),
            "unfinished": sum(1 for s in streams if s.unfinished),
            "not_started": len(report.not_started),
            "not_due": len(report.not_due),
            "full_scan": totals["full_scan_streams"],
        },
        "records": {
            key: totals[key]
            for key in ("fetched", "new", "shipped", "quarantined", "invalid", "late", "future")
        },
        "api_calls": totals["api_calls"],
        "lag": {
            "oldest_watermark_seconds": None if oldest is None else round(oldest),
            "behind_seconds": max(behind) if behind else 0,
        },
        "strategies": sorted({s.strategy for s in streams if s.strategy}),
    }
    return _without_none(health)


def _without_none(doc: Dict[str, Any]) -> Dict[str, Any]:
    """What is not known is left out (a SIEM would index a null as the text "null")."""
    return {k: _without_none(v) if isinstance(v, dict) else v for k, v in doc.items() if v is not None}
