"""The runs' CloudWatch metrics: one embedded-metric-format (EMF) log line per run or plan, which
CloudWatch turns into metrics without an API call (handlers.aws_lambda, aws_planner, aws_worker)."""

from __future__ import annotations

import sys
import time
from typing import Any, Dict, List, Tuple

from forwarder import jsonutil
from forwarder.report import RunReport


def metrics(
    report: RunReport, duration_s: float, function: str, namespace: str, tenant: str = ""
) -> Dict[str, Any]:
    """One CloudWatch embedded-metric-format document for the run (of ``tenant``, when named: the
    values then count both per function and per function and tenant)."""
    totals = report.totals()
    lags = [s.lag_seconds for s in report.streams if s.lag_seconds is not None]
    values: Dict[str, Tuple[Any, str]] = {
        "ShippedEvents": (totals["shipped"], "Count"),
        "QuarantinedEvents": (totals["quarantined"], "Count"),  # refused for good, or unplaceable
        "FutureDatedRecords": (totals["future"], "Count"),  # a peer's clock ahead of ours
        "FailedStreams": (totals["failed_streams"] + (1 if report.error else 0), "Count"),
        "StreamsLeft": (len(report.not_started), "Count"),
        "StreamsNotDue": (len(report.not_due), "Count"),  # skipped by the schedule: waiting their turn
        "SkippedRuns": (1 if report.skip_reason else 0, "Count"),
        "Duration": (round(duration_s * 1000, 1), "Milliseconds"),
    }
    if lags:  # no stream has delivered anything yet: no lag to report
        values["MaxLagSeconds"] = (max(lags), "Seconds")  # the stalest stream (idle users included)
        values["NewestRecordAgeSeconds"] = (min(lags), "Seconds")  # what the lag alarm watches
    return emf(values, function, namespace, tenant)


def emf(
    values: Dict[str, Tuple[Any, str]], function: str, namespace: str, tenant: str = ""
) -> Dict[str, Any]:
    """A CloudWatch embedded-metric-format document of ``{name: (value, unit)}``; with ``tenant``
    the values count both per function and per function and tenant."""
    definitions: List[Dict[str, str]] = [{"Name": k, "Unit": unit} for k, (_, unit) in values.items()]
    dimensions = [["FunctionName"], ["FunctionName", "Tenant"]] if tenant else [["FunctionName"]]
    return {
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [{"Namespace": namespace, "Dimensions": dimensions, "Metrics": definitions}],
        },
        "FunctionName": function,
        **({"Tenant": tenant} if tenant else {}),
        **{k: v for k, (v, _) in values.items()},
    }


def emit(document: Dict[str, Any]) -> None:
    sys.stdout.write(jsonutil.dumps(document).decode() + "\n")  # EMF must be a line of its own
    sys.stdout.flush()
