"""AWS Lambda entry point of the fan-out planner: ``handlers.aws_planner.handler``, on the schedule.

Each invocation turns every tenant's streams into work items (shards of ``FORWARDER_SHARD_SIZE``)
on the FIFO queue ``FORWARDER_QUEUE_URL``, one message group per tenant
(``forwarder.fanout.planner``). A tenant whose last cycle is still running is left for the next
tick. It writes one metrics line per tenant and fails (raises) when any tenant could not be
planned, after the others were queued. On SIGTERM (Lambda shutting the environment down) planning
ends cleanly: the tenants not yet planned are reported ``stopped`` and left for the next tick.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict
from typing import Any, Dict, Tuple

from forwarder import stop
from forwarder.fanout.planner import plan_tenants
from forwarder.fanout.settings import load_fanout_settings
from forwarder.logs import configure
from forwarder.multitenant import tenant_concurrency
from forwarder.tenants import tenants_or_single
from handlers.aws_lambda import environment, metrics_namespace
from handlers.lambda_metrics import emf, emit
from handlers.lambda_runtime import RunFailed, function_name

log = logging.getLogger("forwarder.planner")


def handler(event: Any, context: Any) -> Dict[str, Any]:
    stop.install()  # Lambda's shutdown SIGTERM: the tenant in flight is abandoned, none starts
    env = environment(os.environ)
    try:
        tenants = tenants_or_single(env)  # every tenant checked before any network call
    except stop.Stopped:  # while reading the tenants document: nothing planned, the next tick plans all
        log.warning("planning abandoned on a stop request")
        return {"ok": True, "stopped": True, "tenants": []}
    fanout = load_fanout_settings(env)
    configure(tenants[0].settings.log_level)
    queue = fanout.queue()
    results = plan_tenants(tenants, queue, fanout.shard_size, fanout.max_age_s, tenant_concurrency(env))
    function, namespace = function_name(context, env), metrics_namespace(env)
    for result in results:
        values: Dict[str, Tuple[Any, str]] = {
            "PlannedStreams": (result.streams, "Count"),
            "NotDueStreams": (result.not_due, "Count"),
            "PlannedShards": (result.shards, "Count"),
            "BusyTenants": (1 if result.busy else 0, "Count"),
            "FailedPlans": (1 if result.error else 0, "Count"),
            "StoppedPlans": (1 if result.stopped else 0, "Count"),
        }
        emit(emf(values, function, namespace, tenant=result.tenant))
    failed = [r for r in results if r.error]
    if failed:
        raise RunFailed("planning failed: " + "; ".join(f"tenant {r.tenant}: {r.error}" for r in failed))
    return {"ok": True, "stopped": any(r.stopped for r in results), "tenants": [asdict(r) for r in results]}
