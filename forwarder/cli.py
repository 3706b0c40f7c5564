"""The audit-forwarder command: run, check, demo, state show/reset, simulate."""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Callable, Dict, List, Mapping, Optional, TypeVar

from . import __version__, jsonutil, stop
from .config import VARIABLES, Settings, load_settings, parse_log_format
from .console.session import Console, wants_text
from .console.style import Style, wants_colour
from .errors import ConfigError, ForwarderError
from .logs import configure, redact, register_secrets
from .report import RunReport
from .state.store import StateStore
from .tenants import Tenant, load_tenants, select
from .timeutil import parse_duration

T = TypeVar("T")
EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2
EXIT_QUARANTINED = 3  # the run completed, but put events or records in quarantine
EXIT_FUTURE = 4  # the run completed, but shipped records dated in the future (a peer's clock)
EXIT_TEMPFAIL = 75  # sysexits EX_TEMPFAIL: another run holds the lease; try again later
QUIET_HELP = "print errors only: no progress, summary or warnings; the exit code says the rest"


def run_status(report: RunReport) -> int:
    """The exit status of one run: the most serious of what happened."""
    totals = report.totals()
    if report.skipped:
        return EXIT_TEMPFAIL
    if not report.ok:
        return EXIT_FAILED
    if totals["quarantined"]:
        return EXIT_QUARANTINED
    return EXIT_FUTURE if totals["future"] else EXIT_OK


def _flag(variable: str) -> str:
    return "--" + variable[len("FORWARDER_") :].lower().replace("_", "-")


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """Every non-secret variable has a flag that overrides it; secrets come from the environment only
    (a command line is visible to every user of the machine)."""
    group = parser.add_argument_group("settings (each overrides its FORWARDER_* variable)")
    for v in VARIABLES:
        if not v.secret:
            default = f" (default {v.default})" if v.default else ""
            group.add_argument(_flag(v.name), dest=v.name, metavar="VALUE", help=f"{v.help}{default}")


def _add_tenant_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tenant", metavar="NAME", help="only this tenant of FORWARDER_TENANTS (default: all)"
    )


def _env(args: argparse.Namespace, base: Mapping[str, str]) -> Dict[str, str]:
    env = dict(base)
    for v in VARIABLES:
        value = getattr(args, v.name, None)
        if value is not None:
            env[v.name] = value
    return env


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(_env(args, os.environ))


def _log_format(env: Mapping[str, str]) -> str:
    """FORWARDER_LOG_FORMAT for the commands that do not load every setting (demo, state)."""
    try:
        return parse_log_format(env.get("FORWARDER_LOG_FORMAT"))
    except ValueError as exc:
        raise ConfigError([str(exc)]) from None


def _tables(log_format: str, args: argparse.Namespace) -> Optional[Style]:
    """The style for tables on stdout, or None for the machine form (--json, or not a terminal)."""
    if args.json or not wants_text(log_format, sys.stdout):
        return None
    return Style(wants_colour(sys.stdout, os.environ))


def _tenants(args: argparse.Namespace) -> Optional[List[Tenant]]:
    """The tenants to work on (``--tenant`` picks one), or None without FORWARDER_TENANTS."""
    tenants = load_tenants(_env(args, os.environ))
    name = getattr(args, "tenant", None)
    if tenants is None:
        if name:
            raise ConfigError(
                ["--tenant: FORWARDER_TENANTS is not set, so there are no tenants to choose from"]
            )
        return None
    return select(tenants, name)


def _worst(codes: List[int]) -> int:
    return max(codes, key=lambda c: (c == EXIT_FAILED, c == EXIT_TEMPFAIL, c)) if codes else EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from .app import run_once
    from .multitenant import run_tenants, tenant_concurrency

    tenants = _tenants(args)
    targets = tenants if tenants is not None else [Tenant("", _settings(args), "")]
    concurrency = tenant_concurrency(_env(args, os.environ))
    interval = parse_duration(args.interval) if args.interval else 0
    first = targets[0].settings
    console = Console(first.log_format, first.log_level, os.environ, sys.stderr, quiet=args.quiet)
    # SIGTERM (docker stop, systemd) ends the loop: the run in progress starts nothing new,
    # commits what it shipped, and the process exits with that run's status.
    should_stop = stop.install()
    try:
        while True:
            if tenants is None:
                # a single organization runs here, so its errors reach main() as they always did
                reports = {"": run_once(first, should_stop=should_stop, observer=console.progress())}
            else:
                reports = run_tenants(
                    targets, lambda tenant: run_once(tenant.settings, should_stop=should_stop), concurrency
                )
            codes = []
            for name, report in reports.items():
                console.summary(report)
                if args.report:
                    shown = {"tenant": name, **report.to_dict()} if name else report.to_dict()
                    sys.stderr.write(redact(jsonutil.dumps(shown).decode()) + "\n")
                codes.append(run_status(report))
            code = _worst(codes)
            if interval:
                console.waiting(interval)
            if not interval or stop.wait(interval):
                return code
    finally:
        console.close()


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check

    tenants = _tenants(args)
    targets = tenants if tenants is not None else [Tenant("", _settings(args), "")]
    first = targets[0].settings
    console = Console(first.log_format, first.log_level, os.environ, sys.stderr)
    style = _tables(first.log_format, args)
    passed = []
    for tenant in targets:
        if tenant.name:
            sys.stdout.write(f"tenant {tenant.name}:\n")
        if style is None:
            passed.append(check(tenant.settings, sys.stdout))
            continue
        from .console.views import check_view

        lines = io.StringIO()
        console.screen.status("checking settings, state, sink, token and the first audits page ...")
        passed.append(check(tenant.settings, lines))
        console.screen.clear()
        sys.stdout.write(check_view(lines.getvalue(), style))
    return EXIT_OK if all(passed) else EXIT_FAILED


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import describe, run_demo

    level = os.environ.get("FORWARDER_LOG_LEVEL", "WARNING")
    console = Console(_log_format(os.environ), level, os.environ, sys.stderr, quiet=args.quiet)
    try:
        run = run_demo(args.out, args.state, args.fresh, observer=console.progress())
        console.summary(run.report)
    finally:
        console.close()
    if not args.quiet:
        describe(run, sys.stdout, totals=not console.text)
    return EXIT_OK if run.report.ok else EXIT_FAILED


def cmd_state(args: argparse.Namespace) -> int:
    from .state import open_store

    # Only the state location matters here: no API URL or credentials needed to inspect or reset.
    env = _env(args, os.environ)
    log_format = _log_format(env)
    Console(log_format, env.get("FORWARDER_LOG_LEVEL") or "WARNING", env, sys.stderr)  # sets up logging
    tenants = _tenants(args)
    if tenants is not None and (args.state_command == "show" or len(tenants) == 1):
        return _worst(
            [
                _state_command(
                    args, _opened(open_store, t.settings.state, "FORWARDER_STATE"), t.name, log_format
                )
                for t in tenants
            ]
        )
    if tenants is not None:
        sys.stderr.write("state reset: name the tenant (--tenant NAME)\n")
        return EXIT_CONFIG
    store = _opened(open_store, env.get("FORWARDER_STATE") or "./state", "FORWARDER_STATE")
    return _state_command(args, store, "", log_format)


def _state_command(args: argparse.Namespace, store: StateStore, tenant: str, log_format: str) -> int:
    from .timeutil import format_us, now_us

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
        style = _tables(log_format, args)
        if style is None:
            shown = {"tenant": tenant} if tenant else {}
            sys.stdout.write(
                jsonutil.dumps({**shown, "location": store.location, "streams": rows}).decode() + "\n"
            )
        else:
            from .console.views import state_table

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


def _opened(opener: Callable[[str], T], location: str, variable: str) -> T:
    """``opener(location)``, a bad location being a configuration problem (exit 2), not a traceback."""
    try:
        return opener(location)
    except ValueError as exc:
        message = str(exc)
        raise ConfigError([message if message.startswith(variable) else f"{variable}: {message}"]) from None


def cmd_quarantine(args: argparse.Namespace) -> int:
    from .quarantine import open_quarantine
    from .replay import list_entries, replay
    from .sinks import open_sink

    env = _env(args, os.environ)
    configure(env.get("FORWARDER_LOG_LEVEL") or "WARNING")
    streams, ids = args.stream or [], args.id or []
    if args.quarantine_command == "list":  # only the location matters, as for `state show`
        location = env.get("FORWARDER_QUARANTINE") or "./quarantine"
        quarantine = _opened(open_quarantine, location, "FORWARDER_QUARANTINE")
        list_entries(quarantine, sys.stdout, args.full, streams, ids)
        return EXIT_OK
    settings = load_settings(env)
    register_secrets(settings.secrets())
    quarantine = open_quarantine(settings.quarantine, settings.sink.sse_kms_key_id)
    sink = open_sink(settings.sink)
    try:
        outcome = replay(quarantine, sink, settings, streams, ids)
    finally:
        sink.close()
    sys.stdout.write(redact(jsonutil.dumps(outcome.to_dict()).decode()) + "\n")
    if outcome.error:
        return EXIT_FAILED
    return EXIT_QUARANTINED if outcome.still_quarantined else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="audit-forwarder", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="pull every stream once and ship new events")
    _add_setting_flags(run)
    run.add_argument("--report", action="store_true", help="print the run report as JSON on stderr")
    run.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    run.add_argument(
        "--interval",
        metavar="DURATION",
        help="keep running, one run every DURATION (e.g. 5m) until SIGTERM; for containers and services",
    )
    _add_tenant_flag(run)
    run.set_defaults(func=cmd_run)

    check = sub.add_parser(
        "check", help="validate settings, get a token, make one audits call; ships nothing"
    )
    _add_setting_flags(check)
    check.add_argument(
        "--json", action="store_true", help="one 'ok|FAIL step: result' line per step instead of a table"
    )
    _add_tenant_flag(check)
    check.set_defaults(func=cmd_check)

    demo = sub.add_parser("demo", help="run against the built-in simulator into out/events.ndjson")
    demo.add_argument("--out", default="out", help="output directory (default out)")
    demo.add_argument("--state", default="state", help="state directory (default state)")
    demo.add_argument("--fresh", action="store_true", help="forget earlier demo state and output first")
    demo.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    demo.set_defaults(func=cmd_demo)

    state = sub.add_parser("state", help="show or reset stored stream state")
    state_sub = state.add_subparsers(dest="state_command", required=True)
    show = state_sub.add_parser("show", help="print every stream's watermark and lag, stalest first")
    _add_setting_flags(show)
    show.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_tenant_flag(show)
    reset = state_sub.add_parser(
        "reset", help="forget a stream's state (it restarts at the initial look-back)"
    )
    reset.add_argument("stream", nargs="?", help="stream key as printed by `state show`")
    reset.add_argument("--all", action="store_true", help="reset every stream")
    _add_setting_flags(reset)
    _add_tenant_flag(reset)
    state.set_defaults(func=cmd_state)

    quarantine = sub.add_parser("quarantine", help="list or re-send what was quarantined")
    quarantine_sub = quarantine.add_subparsers(dest="quarantine_command", required=True)
    listing = quarantine_sub.add_parser("list", help="one JSON line per quarantined event or record")
    listing.add_argument("--full", action="store_true", help="include the event or record itself")
    again = quarantine_sub.add_parser(
        "replay", help="send quarantined entries again (same ids); remove each one the sink accepts"
    )
    for command in (listing, again):
        command.add_argument("--stream", action="append", help="only this stream (repeatable)")
        command.add_argument("--id", action="append", help="only this event id (repeatable)")
        _add_setting_flags(command)
    quarantine.set_defaults(func=cmd_quarantine)

    # Listed for --help only: main() hands `simulate ...` to the simulator's own argument parser.
    sub.add_parser("simulate", help="serve the platform API simulator (simulate --help for its options)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["simulate"]:
        from .sim.serve import serve

        return serve(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        sys.stderr.write(redact(f"audit-forwarder: {exc}\n"))
        return EXIT_CONFIG
    except ForwarderError as exc:
        sys.stderr.write(redact(f"audit-forwarder: {exc}\n"))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
