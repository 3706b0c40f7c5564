"""The commands over what a run keeps: state show/reset and quarantine list/replay."""

from __future__ import annotations

import argparse
import sys
from functools import partial

from .. import jsonutil
from ..config import load_settings, read
from ..console.session import Console
from ..logs import configure, redact, register_secrets
from ..state.store import StateStore
from .options import env_of, log_format_of, opened, tables, tenants_of
from .status import EXIT_CONFIG, EXIT_FAILED, EXIT_OK, EXIT_QUARANTINED, worst


def cmd_state(args: argparse.Namespace) -> int:
    from ..state import open_store

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
                    opened(
                        partial(open_store, timeout_seconds=t.settings.http_timeout_s),
                        t.settings.state,
                        "FORWARDER_STATE",
                    ),
                    t.name,
                    log_format,
                )
                for t in tenants
            ]
        )
    if tenants is not None:
        sys.stderr.write("state reset: name the tenant (--tenant NAME)\n")
        return EXIT_CONFIG
    timeout = read(env, "FORWARDER_HTTP_TIMEOUT")
    store = opened(
        partial(open_store, timeout_seconds=timeout), read(env, "FORWARDER_STATE"), "FORWARDER_STATE"
    )
    return _state_command(args, store, "", log_format)


def _state_command(args: argparse.Namespace, store: StateStore, tenant: str, log_format: str) -> int:
    from ..timeutil import format_us, now_us

    keys = sorted(store.keys())
    if args.state_command == "show":
        rows = []
        now = now_us()
        for key in keys:
            state = store.load(key).state
            wm = state.watermark_us
            rows.append(
                {
                    "stream": key,
                    "watermark": None if wm is None else format_us(wm),
                    "ids_in_window": len(state.seen),
                    "delivered_total": state.delivered_total,
                    "lag_seconds": None if wm is None else round((now - wm) / 1e6, 3),
                }
            )
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
    return EXIT_OK


def cmd_quarantine(args: argparse.Namespace) -> int:
    from ..quarantine import open_quarantine
    from ..replay import list_entries, replay
    from ..sinks import open_sink

    env = env_of(args)
    configure(env.get("FORWARDER_LOG_LEVEL") or "WARNING")
    streams, ids = args.stream or [], args.id or []
    if args.quarantine_command == "list":  # only the location and timeout matter, as for `state show`
        location = read(env, "FORWARDER_QUARANTINE")
        timeout = read(env, "FORWARDER_HTTP_TIMEOUT")
        quarantine = opened(lambda at: open_quarantine(at, None, timeout), location, "FORWARDER_QUARANTINE")
        list_entries(quarantine, sys.stdout, args.full, streams, ids)
        return EXIT_OK
    settings = load_settings(env)
    register_secrets(settings.secrets())
    quarantine = open_quarantine(settings.quarantine, settings.sink.sse_kms_key_id, settings.http_timeout_s)
    sink = open_sink(settings.sink)
    try:
        outcome = replay(quarantine, sink, settings, streams, ids)
    finally:
        sink.close()
    sys.stdout.write(redact(jsonutil.dumps(outcome.to_dict()).decode()) + "\n")
    if outcome.error:
        return EXIT_FAILED
    return EXIT_QUARANTINED if outcome.still_quarantined else EXIT_OK
