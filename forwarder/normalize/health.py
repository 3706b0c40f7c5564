"""A run's health summary (``forwarder/health.py``) -> the event in FORWARDER_FORMAT. Pure.

* ECS: ``event.kind: metric``, ``event.dataset: emailauth.forwarder.health``, ``event.module:
  emailauth``, ``event.provider: forwarder``, ``event.outcome`` success / failure / unknown (a run
  skipped or stopped), ``event.start``/``end``/``duration`` (ns), ``event.id`` the run id,
  ``@timestamp`` when the run finished, ``service.*`` the forwarder (name, version, id), ``error.message``
  when it failed, and the whole summary under ``emailauth.forwarder``. No ``event.action``: the
  audit rules (the unknown-action rule reads any action) never see a health event.
* OCSF 1.8.0: Application Lifecycle (6002, category 6 Application Activity), activity 99 Other
  (``activity_name: Run``), ``app`` the forwarder, ``status_id`` 1 Success / 2 Failure / 99 Other
  (skipped, stopped) with ``status`` and ``status_detail``, ``start_time``/``end_time``/``duration``
  (ms), ``metadata.log_name: emailauth.forwarder.health``, the summary in ``unmapped.forwarder``.
* CEF: the audit events' vendor and product, signature ``forwarder.health``, name ``Forwarder run
  <status>``, severity 1 (3 failed, 2 skipped or stopped); ``outcome``, ``start``/``end``, ``cnt``
  records shipped, ``cn1`` quarantined, ``cn2`` failed streams, ``cn3`` API calls, ``cfp1`` lag behind,
  ``cfp2`` oldest watermark lag, ``cfp3`` duration (seconds), ``cs1`` run id, ``cs2`` forwarder id,
  ``cs3`` tenant, ``cs4`` runtime, ``cs5`` stop reason, ``cs6`` error.
* UDM (Google SecOps): a ``GENERIC_EVENT`` (a run is no user's action), ``product_name`` the
  forwarder's (``emailauth-audit-forwarder``, its version: the audit rules read the platform's
  product only), ``product_event_type: forwarder.health``, ``product_log_id`` the run id,
  ``principal`` the forwarder (``application``, ``asset_id``
  ``emailauth-audit-forwarder:<forwarder id>``), ``security_result`` the status (severity ``ERROR``
  for a failed run) and the summary in ``additional.fields`` under
  ``emailauth.forwarder.<field>``, as the audit events carry theirs.
* raw: the summary itself, with ``kind: emailauth.forwarder.health``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from .. import jsonutil
from ..events import Event
from ..health import DATASET, FAILURE, SKIPPED, STOPPED, SUCCESS
from ..timeutil import parse_iso
from . import ECS_VERSION, OCSF_VERSION, NormalizeOptions

SERVICE = "emailauth-audit-forwarder"
SIGNATURE = "forwarder.health"
_ECS_OUTCOME = {SUCCESS: "success", FAILURE: "failure"}
_OCSF_STATUS = {
    SUCCESS: (1, "Success"),
    FAILURE: (2, "Failure"),
    SKIPPED: (99, "Skipped"),
    STOPPED: (99, "Stopped"),
}
_SEVERITY = {SUCCESS: 1, FAILURE: 3, SKIPPED: 2, STOPPED: 2}  # OCSF severity_id and CEF severity
APPLICATION_LIFECYCLE, OTHER = 6002, 99


def message(health: Dict[str, Any]) -> str:
    """One line: what a person reads first in a search result."""
    streams, records = health["streams"], health["records"]
    line = (
        f"forwarder run {health['status']}: {streams['polled']} streams polled, {streams['failed']} failed, "
        f"{records['shipped']} records shipped, {records['quarantined']} quarantined, "
        f"{health['lag']['behind_seconds']}s behind"
    )
    reason = health.get("error") or health.get("skipped_reason")
    return f"{line}: {reason}" if reason else line


def to_ecs(health: Dict[str, Any], opts: NormalizeOptions) -> Dict[str, Any]:
    started, finished = parse_iso(health["started"]), parse_iso(health["finished"])
    event: Dict[str, Any] = {
        "kind": "metric",
        "module": "emailauth",
        "dataset": DATASET,
        "provider": "forwarder",
        "outcome": _ECS_OUTCOME.get(health["status"], "unknown"),
        "id": health["run_id"],
        "start": health["started"],
        "end": health["finished"],
        "duration": max(0, finished - started) * 1000,
        "created": health["finished"],
    }
    doc: Dict[str, Any] = {
        "@timestamp": health["finished"],
        "ecs": {"version": ECS_VERSION},
        "message": message(health),
        "event": event,
        "observer": {"vendor": opts.vendor, "product": opts.product},
        "service": {"name": SERVICE, "version": health["version"], "id": health["forwarder_id"]},
        "emailauth": {"forwarder": health},
    }
    if "error" in health:
        doc["error"] = {"message": health["error"]}
    return doc


def to_ocsf(health: Dict[str, Any], opts: NormalizeOptions) -> Dict[str, Any]:
    status_id, status = _OCSF_STATUS[health["status"]]
    started, finished = parse_iso(health["started"]) // 1000, parse_iso(health["finished"]) // 1000
    doc: Dict[str, Any] = {
        "category_uid": 6,
        "category_name": "Application Activity",
        "class_uid": APPLICATION_LIFECYCLE,
        "class_name": "Application Lifecycle",
        "activity_id": OTHER,
        "activity_name": "Run",
        "type_uid": APPLICATION_LIFECYCLE * 100 + OTHER,
        "type_name": "Application Lifecycle: Other",
        "severity_id": _SEVERITY[health["status"]],
        "time": finished,
        "start_time": started,
        "end_time": finished,
        "duration": max(0, finished - started),
        "status_id": status_id,
        "status": status,
        "message": message(health),
        "metadata": {
            "version": OCSF_VERSION,
            "uid": health["run_id"],
            "product": {"name": opts.product, "vendor_name": opts.vendor, "version": opts.product_version},
            "log_name": DATASET,
            "event_code": SIGNATURE,
        },
        "app": {"name": SERVICE, "version": health["version"], "uid": health["forwarder_id"]},
        "unmapped": {"forwarder": health},
    }
    detail = health.get("error") or health.get("skipped_reason")
    if detail:
        doc["status_detail"] = detail
    return doc


def to_cef(health: Dict[str, Any], opts: NormalizeOptions) -> str:
    from .cef import LIMITS, escape_header, escape_value  # not for the JSON formats' idle runs

    status = health["status"]
    head = "|".join(
        [
            "CEF:0",
            escape_header(opts.vendor),
            escape_header(opts.product),
            escape_header(opts.product_version),
            SIGNATURE,
            f"Forwarder run {status}",
            str(_SEVERITY[status]),
        ]
    )
    lag = health["lag"]
    pairs: List[Any] = [
        ("rt", parse_iso(health["finished"]) // 1000),
        ("start", parse_iso(health["started"]) // 1000),
        ("end", parse_iso(health["finished"]) // 1000),
        ("outcome", status),
        ("cnt", health["records"]["shipped"]),
        ("cn1Label", "quarantined"),
        ("cn1", health["records"]["quarantined"]),
        ("cn2Label", "failedStreams"),
        ("cn2", health["streams"]["failed"]),
        ("cn3Label", "apiCalls"),
        ("cn3", health["api_calls"]),
        ("cfp1Label", "lagBehindSeconds"),
        ("cfp1", lag["behind_seconds"]),
        ("cfp2Label", "oldestWatermarkLagSeconds"),
        ("cfp2", lag.get("oldest_watermark_seconds")),
        ("cfp3Label", "durationSeconds"),
        ("cfp3", health["duration_seconds"]),
        ("cs1Label", "runId"),
        ("cs1", health["run_id"]),
        ("cs2Label", "forwarderId"),
        ("cs2", health["forwarder_id"]),
        ("cs3Label", "tenant"),
        ("cs3", health["tenant"]),
        ("cs4Label", "runtime"),
        ("cs4", health["runtime"]),
        ("cs5Label", "stopReason"),
        ("cs5", health.get("stop_reason")),
        ("cs6Label", "error"),
        ("cs6", health.get("error") or health.get("skipped_reason")),
        ("msg", message(health)[: LIMITS["msg"]]),
    ]
    extension = " ".join(
        f"{key}={escape_value(str(value))}" for key, value in pairs if value not in (None, "")
    )
    return f"{head}|{extension}"


_UDM_SEVERITY = {SUCCESS: "INFORMATIONAL", FAILURE: "ERROR", SKIPPED: "LOW", STOPPED: "LOW"}


def to_udm(health: Dict[str, Any], opts: NormalizeOptions) -> Dict[str, Any]:
    from .udm import flat  # not for the other formats' idle runs

    status = health["status"]
    result: Dict[str, Any] = {"severity": _UDM_SEVERITY[status], "summary": f"forwarder run {status}"}
    detail = health.get("error") or health.get("skipped_reason")
    if detail:
        result["description"] = detail
    return {
        "metadata": {
            "event_timestamp": health["finished"],
            "collected_timestamp": health["finished"],
            "event_type": "GENERIC_EVENT",
            "product_name": SERVICE,
            "product_version": health["version"],
            "product_log_id": health["run_id"],
            "product_event_type": SIGNATURE,
            "description": message(health),
        },
        "principal": {"application": SERVICE, "asset_id": f"{SERVICE}:{health['forwarder_id']}"},
        "security_result": [result],
        "additional": {"fields": flat("emailauth.forwarder", health, {})},
    }


def _json(shape: Callable[[Dict[str, Any], NormalizeOptions], Dict[str, Any]]) -> Callable[..., Event]:
    def build(health: Dict[str, Any], opts: NormalizeOptions) -> Event:
        time_us = parse_iso(health["finished"])
        return Event(health["run_id"], time_us, jsonutil.dumps(shape(health, opts)))

    return build


def _cef(health: Dict[str, Any], opts: NormalizeOptions) -> Event:
    return Event(health["run_id"], parse_iso(health["finished"]), to_cef(health, opts).encode("utf-8"), False)


def _raw(health: Dict[str, Any], _opts: NormalizeOptions) -> Dict[str, Any]:
    return {"kind": DATASET, **health}


FORMATTERS: Dict[str, Callable[[Dict[str, Any], NormalizeOptions], Event]] = {
    "ecs": _json(to_ecs),
    "ocsf": _json(to_ocsf),
    "cef": _cef,
    "raw": _json(_raw),
    "udm": _json(to_udm),
}


def health_event(health: Dict[str, Any], event_format: str, opts: NormalizeOptions) -> Event:
    """The health event in ``event_format`` (one of FORWARDER_FORMAT's values)."""
    return FORMATTERS[event_format](health, opts)
