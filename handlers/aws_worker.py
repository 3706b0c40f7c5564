"""AWS Lambda entry point of the fan-out worker: ``handlers.aws_worker.handler``, behind an SQS
event source mapping with ``ReportBatchItemFailures``.

Each message is one work item (a shard of one tenant's streams); ``forwarder.fanout.worker`` runs
them in order, stops starting streams ``FORWARDER_DEADLINE_MARGIN`` before the invocation's end and
re-queues what it did not start. On SIGTERM (Lambda shutting the environment down) the item in flight
and the items after it go back to the queue whole, for another worker. The answer lists the messages
that go back to the queue; an item never fails the whole invocation, a bad configuration does (every
message then comes back).
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Tuple

from forwarder import stop
from forwarder.fanout.settings import load_fanout_settings
from forwarder.fanout.worker import process
from forwarder.logs import configure
from forwarder.tenants import tenants_or_single
from handlers.aws_lambda import deadline_margin, environment, metrics_namespace
from handlers.lambda_metrics import emit, metrics
from handlers.lambda_runtime import deadline, function_name


def messages(event: Any) -> List[Tuple[str, str]]:
    records = event.get("Records", []) if isinstance(event, dict) else []
    return [(str(r.get("messageId", "")), str(r.get("body", ""))) for r in records if isinstance(r, dict)]


def handler(event: Any, context: Any) -> Dict[str, Any]:
    started = time.monotonic()
    stop.install()  # Lambda's shutdown SIGTERM: the item in flight goes back to the queue, nothing starts
    env = environment(os.environ)
    try:
        tenants = {t.name: t for t in tenants_or_single(env)}
    except stop.Stopped:  # while reading the tenants document: every message goes back untouched
        ids = [message_id for message_id, _ in messages(event)]
        return {
            "batchItemFailures": [{"itemIdentifier": i} for i in ids],
            "outcomes": dict.fromkeys(ids, "not_started"),
        }
    fanout = load_fanout_settings(env)
    margin_s = deadline_margin(env)
    configure(next(iter(tenants.values())).settings.log_level)
    results = process(messages(event), tenants, fanout.queue(), deadline(context, margin_s))
    function, namespace = function_name(context, env), metrics_namespace(env)
    for result in results:
        if result.report is not None:
            emit(
                metrics(result.report, time.monotonic() - started, function, namespace, tenant=result.tenant)
            )
    return {
        "batchItemFailures": [{"itemIdentifier": r.message_id} for r in results if r.release],
        "outcomes": {r.message_id: r.outcome for r in results},
    }
