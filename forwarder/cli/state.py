"""`state show` and `state reset`: what a run keeps of each stream."""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from .. import jsonutil
from ..config import read_all
from ..console.session import Console
from ..delivery import journal
from ..logs import register_secrets
from ..state import delivered
from ..state.store import StateStore
from .options import env_of, log_format_of, opened, tables, tenants_of
from .status import EXIT_CONFIG, EXIT_FAILED, EXIT_OK, worst


def _store(location: str, splunk_token: Optional[str], timeout_s: float) -> StateStore:
    from ..state import open_store

    register_secrets([splunk_token])
    return opened(lambda at: open_store(at, splunk_token, timeout_s), location, "FORWARDER_STATE")


def cmd_state(args: argparse.Namespace) -> int:
    # Only the state location and timeout matter here: no API URL or credentials needed to inspect or reset.
    env = env_of(args)
    log_format = log_format_of(env)
    Console(log_format, env.get("FORWARDER_LOG_LEVEL") or "WARNING", env, sys.stderr)  # sets up logging
    tenants = tenants_of(args)
    if tenants is not None and (args.state_command == "show" or len(tenants) == 1):
        return worst(
            [
                _state_command(
                    args,
                    _store(t.settings.state, t.settings.splunk_token, t.settings.http_timeout_s),
                    t.name,
                    log_format,
                )
                for t in tenants
            ]
        )
    if tenants is not None:
        sys.stderr.write("state reset: name the tenant (--tenant NAME)\n")
        return EXIT_CONFIG
    values = read_all(env, ("FORWARDER_STATE", "FORWARDER_SPLUNK_TOKEN", "FORWARDER_HTTP_TIMEOUT"))
    store = _store(
        values["FORWARDER_STATE"], values["FORWARDER_SPLUNK_TOKEN"], values["FORWARDER_HTTP_TIMEOUT"]
    )
    return _state_command(args, store, "", log_format)


def _state_command(args: argparse.Namespace, store: StateStore, tenant: str, log_format: str) -> int:
    from ..scheduling.orgindex import ORG_NAME
    from ..timeutil import format_us, now_us

    keys = sorted(store.keys())
    if args.state_command == "show":
        rows = []
        now = now_us()
        for key in keys:
            state = store.load(key).state
            wm = state.watermark_us
            row = {
                "stream": key,
                "watermark": None if wm is None else format_us(wm),
                "ids_in_window": len(state.seen),
                "delivered_total": state.delivered_total,
                "lag_seconds": None if wm is None else round((now - wm) / 1e6, 3),
            }
            if key.partition("/")[2] == ORG_NAME:  # not a user's or a domain's: the org-wide answers'
                row["org_wide"] = True
            rows.append(row)
        style = tables(log_format, args)
        if style is None:
            shown = {"tenant": tenant} if tenant else {}
            sys.stdout.write(
                jsonutil.dumps({**shown, "location": store.location, "streams": rows}).decode() + "\n"
            )
        else:
            from ..console.views import state_table

            location = f"tenant {tenant}: {store.location}" if tenant else store.location
            sys.stdout.write(state_table(location, rows, style))
        return EXIT_OK
    targets = keys if args.all else [args.stream]
    if not args.all and not args.stream:
        sys.stderr.write("state reset: name a stream (see `state show`) or pass --all\n")
        return EXIT_CONFIG
    missing = [t for t in targets if t not in keys]
    if missing:
        sys.stderr.write(f"state reset: no state for {', '.join(missing)} in {store.location}\n")
        return EXIT_FAILED
    for key in targets:
        store.delete(key)
        sys.stdout.write(f"reset {key}: its next run starts at now minus FORWARDER_INITIAL_LOOKBACK\n")
    # Else the records the index holds (the last FORWARDER_LOOKBACK_WINDOW's) would not be re-sent,
    # nor those of the objects a cut batch left (the next run would record them as delivered).
    for name, what in ((delivered.SLOT, "index of delivered event ids"), (journal.SLOT, "pending objects")):
        slot = store.slot(name)
        _, version = slot.read()
        if version is not None:
            slot.delete(version)
            sys.stdout.write(f"reset the {what} ({slot.location}) with it\n")
    return EXIT_OK
