"""AWS Lambda entry point: ``handlers.aws_lambda.handler``, scheduled by EventBridge.

Every invocation is one run (``forwarder.app.run_once``) configured from the environment (DESIGN §6).
Any event works: the scheduled event's content is not needed, so a console test event ``{}`` runs
the same way. What the invocation does:

* reads ``FORWARDER_CREDENTIALS``, ``FORWARDER_SINK_TOKEN_SECRET`` and
  ``FORWARDER_AZURE_CLIENT_SECRET_SECRET`` from Secrets Manager or SSM (cached for a few minutes
  across warm invocations; nothing else outlives an invocation);
* polls the streams the scheduler chooses (``forwarder.scheduling``: the hot ones, then those whose
  turn it is), and stops starting streams once its budget is spent or fewer than
  ``FORWARDER_DEADLINE_MARGIN`` seconds are left, leaving them to the next invocation;
* writes one CloudWatch embedded-metric log line and returns the run report;
* with ``FORWARDER_TENANTS``, runs every tenant at once (``FORWARDER_TENANT_CONCURRENCY`` at a time),
  each with its own state namespace, lease and metrics (dimension ``Tenant``), and reports them all;
* fails (raises) when a stream or the run failed, so the Errors alarm fires. A run skipped because
  another run holds the lease is NOT a failure: with reserved concurrency 1 that only happens
  when an invocation overran, and failing would make EventBridge and Lambda retry into the lease.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Dict, List, Mapping

from forwarder import credentials, stop
from forwarder.app import run_once
from forwarder.config import load_settings, read
from forwarder.logs import configure
from forwarder.multitenant import run_tenants, tenant_concurrency
from forwarder.report import RunReport
from forwarder.retry import REAL_TIME, Pace
from forwarder.tenants import Tenant, load_tenants

from .lambda_metrics import emit, metrics
from .lambda_runtime import RunFailed, deadline, function_name

log = logging.getLogger("forwarder.lambda")


# A variable naming a secret -> (the variable it fills, the field of a JSON secret holding it).
SECRET_REFS = {
    "FORWARDER_SINK_TOKEN_SECRET": ("FORWARDER_SINK_TOKEN", "token"),
    "FORWARDER_AZURE_CLIENT_SECRET_SECRET": ("FORWARDER_AZURE_CLIENT_SECRET", "client_secret"),
}


def environment(env: Mapping[str, str]) -> Dict[str, str]:
    """The settings' environment with the sink's secrets fetched from Secrets Manager or SSM, where
    a reference names them."""
    resolved = dict(env)
    for variable, (target, key) in SECRET_REFS.items():
        ref = read(env, variable)
        if ref:
            timeout_s = read(env, "FORWARDER_HTTP_TIMEOUT")
            resolved[target] = credentials.load_token(
                ref, timeout_seconds=timeout_s, variable=variable, key=key
            )
    return resolved


def deadline_margin(env: Mapping[str, str]) -> int:
    return int(read(env, "FORWARDER_DEADLINE_MARGIN"))


def metrics_namespace(env: Mapping[str, str]) -> str:
    return str(read(env, "FORWARDER_METRICS_NAMESPACE"))


def response(report: RunReport) -> Dict[str, Any]:
    """The report, with idle streams counted rather than listed: a response is capped at 6 MB and
    thousands of user streams with nothing new would fill it."""
    result: Dict[str, Any] = report.to_dict()
    busy = [s for s in result["streams"] if s["fetched"] or s["shipped"] or s["error"]]
    result["idle_streams"] = len(result["streams"]) - len(busy)
    result["streams"] = busy[:1000]
    result["not_started_count"] = len(report.not_started)
    result["not_started"] = report.not_started[:100]
    result["not_due_count"] = len(report.not_due)
    result["not_due"] = report.not_due[:100]
    return result


def summary(report: RunReport) -> str:
    failed = report.failure_lines()  # streams that failed alike, once with their number
    problems = ([report.error] if report.error else []) + failed[:10]
    more = f" (and {len(failed) - 10} more reasons)" if len(failed) > 10 else ""
    return "run failed: " + "; ".join(p for p in problems if p) + more


def handler(event: Any, context: Any, *, pace: Pace = REAL_TIME) -> Dict[str, Any]:
    """One invocation (Lambda passes ``event`` and ``context``); its runs wait at ``pace``."""
    started = time.monotonic()
    stop.install()  # Lambda's shutdown SIGTERM: abandon the batch in flight uncommitted, start nothing
    env = os.environ
    resolved = environment(env)
    tenants = load_tenants(resolved)  # ConfigError fails the invocation: alarms fire
    if tenants is not None:
        return tenants_handler(context, tenants, resolved, started, pace)
    settings = load_settings(resolved)
    margin_s = deadline_margin(env)
    configure(settings.log_level)
    trigger = event.get("detail-type", "manual") if isinstance(event, dict) else "manual"
    log.info("invocation", extra={"trigger": trigger})

    report = run_once(settings, should_stop=deadline(context, margin_s), runtime="lambda", pace=pace)
    emit(metrics(report, time.monotonic() - started, function_name(context, env), metrics_namespace(env)))

    result = response(report)
    if report.not_started:
        log.warning(
            "deadline reached: streams left for the next run", extra={"left": len(report.not_started)}
        )
    if not report.ok:
        credentials.forget()  # in case a secret was rotated: the next run fetches it again
        raise RunFailed(summary(report))
    return result


def tenants_handler(
    context: Any, tenants: List[Tenant], env: Mapping[str, str], started: float, pace: Pace = REAL_TIME
) -> Dict[str, Any]:
    """Every tenant's run at once; one tenant's failure fails the invocation only after all ran."""
    margin_s = deadline_margin(env)
    concurrency = tenant_concurrency(env)
    configure(tenants[0].settings.log_level)
    should_stop = deadline(context, margin_s)
    reports = run_tenants(
        tenants,
        lambda t: run_once(t.settings, should_stop=should_stop, runtime="lambda", tenant=t.name, pace=pace),
        concurrency,
    )
    function, namespace = function_name(context, env), metrics_namespace(env)
    for name, report in reports.items():
        emit(metrics(report, time.monotonic() - started, function, namespace, tenant=name))
    failed = {name: r for name, r in reports.items() if not r.ok}
    if failed:
        credentials.forget()
        raise RunFailed("; ".join(f"tenant {name}: {summary(r)}" for name, r in failed.items()))
    return {"ok": True, "tenants": {name: response(r) for name, r in reports.items()}}
