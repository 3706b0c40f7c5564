"""Runs several tenants at once, each fenced off from the others.

Each tenant has its own API client (token, rate limit, retries), store namespace, lease and
quarantine, so a tenant whose credentials were revoked or whose API answers 429 for minutes only
slows its own thread; whatever one tenant's run raises becomes that tenant's failed report.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, Mapping, Sequence, TypeVar

from . import stop
from .config import read
from .errors import describe
from .logs import redact, tenant_logs
from .report import RunReport
from .tenants import Tenant
from .timeutil import format_us, now_us

log = logging.getLogger(__name__)
T = TypeVar("T")


def tenant_concurrency(env: Mapping[str, str]) -> int:
    return int(read(env, "FORWARDER_TENANT_CONCURRENCY"))


def failed_report(message: str) -> RunReport:
    stamp = format_us(now_us())
    return RunReport(started=stamp, finished=stamp, error=message)


def isolated(tenant: Tenant, run: Callable[[Tenant], T], failed: Callable[[str], T]) -> T:
    """``run(tenant)``, with anything it raises turned into ``failed(message)`` for that tenant."""
    try:
        return run(tenant)
    except Exception as exc:  # the isolation boundary: no tenant's surprise reaches another
        message = redact(describe(exc))
        log.error("tenant failed", extra={"tenant": tenant.name, "error": message})
        return failed(message)


def run_tenants(
    tenants: Sequence[Tenant],
    run: Callable[[Tenant], T],
    concurrency: int,
    failed: Callable[[str], T] = failed_report,  # type: ignore[assignment]
) -> Dict[str, T]:
    """Every tenant's result, by name; ``concurrency`` tenants at a time. What a tenant's thread logs
    names the tenant."""
    if not tenants:
        return {}

    def tagged(tenant: Tenant) -> T:
        with tenant_logs(tenant.name):
            return isolated(tenant, run, failed)

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(tenants)))) as pool:
        results = [stop.settle(f) for f in [pool.submit(tagged, t) for t in tenants]]
    return {t.name: r for t, r in zip(tenants, results)}
