"""`quarantine list` and `quarantine replay`. With tenants, every tenant's quarantine (or the one
``--tenant`` names) is listed, each line naming its tenant, and each tenant's entries are replayed
into that tenant's own sink (its index, namespace or prefix): never into another tenant's."""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from .. import jsonutil
from ..config import Settings, load_settings, read
from ..logs import configure, redact, register_secrets
from ..replay import ReplayOutcome
from ..tenants import Tenant
from .options import env_of, opened, tenants_of
from .status import EXIT_FAILED, EXIT_OK, EXIT_QUARANTINED, EXIT_TEMPFAIL, worst


def cmd_quarantine(args: argparse.Namespace) -> int:
    env = env_of(args)
    configure(env.get("FORWARDER_LOG_LEVEL") or "WARNING")
    tenants = tenants_of(args)
    if tenants is None:
        if args.quarantine_command == "list":  # only the location and timeout matter, as for `state show`
            _list(args, read(env, "FORWARDER_QUARANTINE"), read(env, "FORWARDER_HTTP_TIMEOUT"), "")
            return EXIT_OK
        settings = load_settings(env)
        register_secrets(settings.secrets())
        return _shown(_replay(args, settings), "")
    for tenant in tenants:  # every tenant's secrets are masked before any tenant's output
        register_secrets(tenant.settings.secrets())
    if args.quarantine_command == "list":
        for tenant in tenants:
            _list(args, tenant.settings.quarantine, tenant.settings.http_timeout_s, tenant.name)
        return EXIT_OK
    return worst([_shown(_tenant_replay(args, tenant), tenant.name) for tenant in tenants])


def _list(args: argparse.Namespace, location: str, timeout_s: float, tenant: str) -> None:
    from ..quarantine import open_quarantine
    from ..replay import list_entries

    quarantine = opened(lambda at: open_quarantine(at, None, timeout_s), location, "FORWARDER_QUARANTINE")
    if not list_entries(quarantine, sys.stdout, args.full, args.stream or [], args.id or [], tenant):
        # stdout stays JSON lines for scripts; a person is told the list is empty, not left guessing
        narrowed = " matching --stream/--id" if args.stream or args.id else ""
        sys.stderr.write(f"no quarantined entries{narrowed} in {location}\n")


def _replay(args: argparse.Namespace, settings: Settings) -> ReplayOutcome:
    """The settings' quarantine sent again into the settings' own sink, under the run lease."""
    from ..pipeline import new_owner
    from ..quarantine import open_quarantine
    from ..replay import replay, replay_holding
    from ..sinks import open_sink
    from ..state import open_store_for

    def work(renew: Callable[[], None]) -> ReplayOutcome:
        quarantine = open_quarantine(
            settings.quarantine, settings.sink.sse_kms_key_id, settings.http_timeout_s
        )
        sink = open_sink(settings.sink)
        try:
            return replay(quarantine, sink, settings, args.stream or [], args.id or [], renew)
        finally:
            sink.close()

    return replay_holding(open_store_for(settings), new_owner(), settings.lease_ttl_s, work)


def _tenant_replay(args: argparse.Namespace, tenant: Tenant) -> ReplayOutcome:
    """One tenant's replay; whatever it raises is that tenant's failed outcome, not the others'."""
    from ..multitenant import isolated

    return isolated(tenant, lambda t: _replay(args, t.settings), lambda message: ReplayOutcome(error=message))


def _shown(outcome: ReplayOutcome, tenant: str) -> int:
    named = {"tenant": tenant} if tenant else {}
    sys.stdout.write(redact(jsonutil.dumps({**named, **outcome.to_dict()}).decode()) + "\n")
    if outcome.error:
        return EXIT_FAILED
    if outcome.skipped:
        return EXIT_TEMPFAIL
    return EXIT_QUARANTINED if outcome.still_quarantined else EXIT_OK
