"""The planner's work: every tenant's streams the scheduler chooses (``forwarder.scheduling``: the
hot ones, then those whose turn it is; where the org-wide index is honoured, the streams it names,
then backstops), in shards, onto the queue (one cycle per tenant). The workers tell the same
scheduler document what they polled, so the next cycle chooses from that.

A tenant whose previous cycle is still running is left alone this time (``cycle.py``); a tenant
whose planning fails (bad credentials, users endpoint down) fails alone: the others are queued.
On a stop request (Lambda's SIGTERM) no tenant's planning starts and the one in flight is abandoned:
those tenants are reported ``stopped``, not failed, and the next tick plans them.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

from .. import stop
from ..app import build_client, consult_index, plan
from ..delivery.claims import Claims
from ..errors import StateError
from ..multitenant import run_tenants
from ..report import RunReport
from ..scheduling.policy import policy_for
from ..scheduling.scheduler import Scheduler
from ..state import open_store_for
from ..tenants import Tenant
from ..timeutil import format_us, now_us
from . import cycle
from .queue import WorkQueue
from .workitem import shard_plan

log = logging.getLogger(__name__)


@dataclass
class TenantPlan:
    tenant: str
    streams: int = 0  # queued this cycle (the scheduler's choice)
    shards: int = 0
    not_due: int = 0  # planned streams the schedule does not need this cycle
    busy: Optional[str] = None  # why nothing was queued: the previous cycle is still running
    error: Optional[str] = None
    stopped: bool = False  # not planned (or not whole) because a stop was requested


def new_cycle(clock: Callable[[], float] = time.time) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(clock())) + "-" + secrets.token_hex(3)


def plan_tenant(
    tenant: Tenant, queue: WorkQueue, cycle_id: str, shard_size: int, max_age_s: int
) -> TenantPlan:
    settings = tenant.settings
    store = open_store_for(settings)
    slot = cycle.marker(store)
    try:
        busy = cycle.open_cycle_of(slot, now_us(), max_age_s)
    except StateError as exc:
        log.warning("fan-out cycle marker unreadable: planning anyway", extra={"error": str(exc)})
        busy = None
    if busy:
        log.info("tenant still busy: not planned", extra={"tenant": tenant.name, "reason": busy})
        return TenantPlan(tenant.name, busy=busy)
    scheduler = Scheduler.for_store(store, policy_for(settings))
    scheduler.load()
    client = build_client(settings)
    try:
        planned = plan(settings, client, scheduler)
        # The org-wide index as an index: the streams it names are queued first, the others of its
        # object type are backstops. Not as a source: a worker is handed stream keys, not records.
        claims = Claims.load(store, settings.lookback_window_s, settings.tie_margin_s)
        consult_index(settings, scheduler, client, planned, claims.delivered, source=False)
    finally:
        client.close()
    chosen = scheduler.choose(planned)
    scheduler.finish(planned, RunReport(format_us(now_us())), None)  # the users list, for the next ticks
    items = shard_plan(tenant.name, cycle_id, planned, shard_size, chosen.order)
    if items:
        cycle.open_cycle(slot, cycle_id, len(items), now_us())
        try:
            queue.send(items)
        except Exception:
            cycle.open_cycle(slot, cycle_id, 0, now_us())  # nothing of it runs: not busy next time
            raise
    log.info(
        "tenant planned",
        extra={
            "tenant": tenant.name,
            "streams": len(chosen.order),
            "not_due": len(chosen.not_due),
            "shards": len(items),
        },
    )
    return TenantPlan(tenant.name, streams=len(chosen.order), shards=len(items), not_due=len(chosen.not_due))


def plan_tenants(
    tenants: Sequence[Tenant], queue: WorkQueue, shard_size: int, max_age_s: int, concurrency: int
) -> List[TenantPlan]:
    cycle_id = new_cycle()

    def plan_unless_stopped(tenant: Tenant) -> TenantPlan:
        try:
            stop.check(f"planning tenant {tenant.name}")
            return plan_tenant(tenant, queue, cycle_id, shard_size, max_age_s)
        except stop.Stopped as exc:
            log.warning(
                "tenant not planned: stop requested", extra={"tenant": tenant.name, "reason": str(exc)}
            )
            return TenantPlan(tenant.name, stopped=True)

    results = run_tenants(
        tenants,
        plan_unless_stopped,
        concurrency,
        failed=lambda message: TenantPlan("", error=message),
    )
    for name, result in results.items():
        result.tenant = name
    return list(results.values())
