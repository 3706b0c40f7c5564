"""The worker's work: run the work items of one batch of queue messages, in order.

Per item: run its shard (``app.run_once`` with the tenant's store, its lease owned by the item so a
redelivered item takes its own lease back at once) and say what becomes of the message:

* ``done`` - every stream ran and committed: delete it, and count the shard off its cycle;
* ``requeued`` - the deadline came first: the streams it did not start go back on the queue as a
  new item of the same tenant, and the message is deleted;
* ``retry`` - a stream or the run failed, another run holds the tenant's lease, or a stop was
  requested (SIGTERM: what the run had not committed is another worker's to redo): the message goes
  back to the queue (after its visibility timeout) and, after a few tries, to the dead-letter queue;
* ``dropped`` - the tenant is gone from the tenants document: delete it.

A FIFO batch keeps its order: after the first item to retry, and once the deadline is near or a
stop is requested, the items left are not started and go back as they are.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from .. import stop
from ..api.client import ApiClient
from ..app import run_once
from ..config import Settings
from ..multitenant import isolated
from ..report import RunReport
from ..state import open_store_for
from ..streams import Stream
from ..tenants import Tenant
from . import cycle
from .queue import WorkQueue
from .workitem import WorkItem

log = logging.getLogger(__name__)


@dataclass
class ItemResult:
    message_id: str
    outcome: str  # done, requeued, retry, dropped, not_started
    tenant: str = ""
    report: Optional[RunReport] = None
    reason: str = ""

    @property
    def release(self) -> bool:
        """Whether the message goes back to the queue (a batch item failure)."""
        return self.outcome in ("retry", "not_started")


def run_item(
    item: WorkItem, tenant: Tenant, queue: WorkQueue, should_stop: Callable[[], bool]
) -> Tuple[str, Optional[RunReport], str]:
    """(outcome, report, reason) of one item."""
    settings = tenant.settings
    store = open_store_for(settings)
    full, shard = item.plan(settings.object_types, settings.filters)

    def handed_plan(_settings: Settings, _client: ApiClient) -> List[Stream]:
        return full  # run_once has the token first: refused credentials fail the item once

    report = run_once(
        settings,
        should_stop=should_stop,
        order=lambda _planned: shard,
        planner=handed_plan,
        store=store,
        owner=f"fanout:{item.id}",
        runtime="lambda-worker",
        tenant=tenant.name,
    )
    if stop.requested():  # checked first: a stopped run may look whole (stopped while planning)
        return "retry", report, "stopped on request before the item was done: it goes back to the queue"
    if report.skip_reason:
        return "retry", report, report.skip_reason
    if not report.ok:
        failed = [f"{s.stream}: {s.error}" for s in report.streams if not s.ok]
        return "retry", report, "; ".join(([report.error] if report.error else []) + failed[:5])
    if report.not_started:
        queue.send([item.rest(report.not_started)])
        return "requeued", report, f"{len(report.not_started)} stream(s) left for the next worker"
    cycle.finish_shard(cycle.marker(store), item.cycle)
    return "done", report, ""


def process(
    messages: Sequence[Tuple[str, str]],
    tenants: Mapping[str, Tenant],
    queue: WorkQueue,
    should_stop: Callable[[], bool],
) -> List[ItemResult]:
    """One result per ``(message id, body)``, in order."""
    results: List[ItemResult] = []
    halted = False
    for message_id, body in messages:
        if halted or (results and (stop.requested() or should_stop())):
            results.append(ItemResult(message_id, "not_started"))
            halted = True
            continue
        result = _one(message_id, body, tenants, queue, should_stop)
        results.append(result)
        halted = result.release
    return results


def _one(
    message_id: str,
    body: str,
    tenants: Mapping[str, Tenant],
    queue: WorkQueue,
    should_stop: Callable[[], bool],
) -> ItemResult:
    try:
        item = WorkItem.from_body(body)
    except ValueError as exc:  # never succeeds: let it reach the dead-letter queue and its alarm
        log.error("not a work item", extra={"message_id": message_id, "error": str(exc)})
        return ItemResult(message_id, "retry", reason=str(exc))
    tenant = tenants.get(item.tenant)
    if tenant is None:
        log.warning("work item of a tenant no longer configured: dropped", extra={"tenant": item.tenant})
        return ItemResult(message_id, "dropped", item.tenant, reason="tenant not configured")
    # The item fails alone, as "retry": the batch's other tenants are not touched.
    outcome, report, reason = isolated(
        tenant, lambda t: run_item(item, t, queue, should_stop), lambda message: ("retry", None, message)
    )
    level = logging.WARNING if outcome == "retry" else logging.INFO
    log.log(
        level,
        "work item finished",
        extra={
            "tenant": item.tenant,
            "shard": item.shard,
            "part": item.part,
            "outcome": outcome,
            "reason": reason,
        },
    )
    return ItemResult(message_id, outcome, item.tenant, report, reason)
