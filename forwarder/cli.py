"""The audit-forwarder command: run, check, demo, state show/reset, simulate."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Dict, List, Mapping, Optional

from . import __version__, jsonutil
from .config import VARIABLES, Settings, load_settings
from .errors import ConfigError, ForwarderError
from .logs import configure
from .report import RunReport
from .state.store import StateStore
from .tenants import Tenant, load_tenants, select
from .timeutil import parse_duration

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2
EXIT_TEMPFAIL = 75  # sysexits EX_TEMPFAIL: another run holds the lease; try again later


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
    configure(targets[0].settings.log_level)
    # SIGTERM (docker stop, systemd) ends the loop: the run in progress starts no new stream,
    # commits what it shipped, and the process exits with that run's status.
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    while True:

        def one(tenant: Tenant) -> RunReport:
            return run_once(tenant.settings, should_stop=stopping.is_set)

        # a single organization runs here, so its errors reach main() as they always did
        reports = run_tenants(targets, one, concurrency) if tenants is not None else {"": one(targets[0])}
        codes = []
        for name, report in reports.items():
            if args.report:
                shown = {"tenant": name, **report.to_dict()} if name else report.to_dict()
                sys.stderr.write(jsonutil.dumps(shown).decode() + "\n")
            codes.append(EXIT_TEMPFAIL if report.skipped else EXIT_OK if report.ok else EXIT_FAILED)
        code = _worst(codes)
        if not interval or stopping.wait(interval):
            return code


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check

    tenants = _tenants(args)
    if tenants is None:
        settings = _settings(args)
        configure(settings.log_level)
        return EXIT_OK if check(settings, sys.stdout) else EXIT_FAILED
    configure(tenants[0].settings.log_level)
    passed = []
    for tenant in tenants:
        sys.stdout.write(f"tenant {tenant.name}:\n")
        passed.append(check(tenant.settings, sys.stdout))
    return EXIT_OK if all(passed) else EXIT_FAILED


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import demo

    configure(os.environ.get("FORWARDER_LOG_LEVEL", "WARNING"))
    return demo(out_dir=args.out, state_dir=args.state, fresh=args.fresh, stream=sys.stdout)


def cmd_state(args: argparse.Namespace) -> int:
    from .state import open_store

    # Only the state location matters here: no API URL or credentials needed to inspect or reset.
    env = _env(args, os.environ)
    configure(env.get("FORWARDER_LOG_LEVEL") or "WARNING")
    tenants = _tenants(args)
    if tenants is not None and (args.state_command == "show" or len(tenants) == 1):
        return _worst([_state_command(args, open_store(t.settings.state), t.name) for t in tenants])
    if tenants is not None:
        sys.stderr.write("state reset: name the tenant (--tenant NAME)\n")
        return EXIT_CONFIG
    return _state_command(args, open_store(env.get("FORWARDER_STATE") or "./state"), "")


def _state_command(args: argparse.Namespace, store: StateStore, tenant: str) -> int:
    from .timeutil import format_us

    keys = sorted(store.keys())
    if args.state_command == "show":
        rows = []
        for key in keys:
            state = store.load(key).state
            rows.append(
                {
                    "stream": key,
                    "watermark": None if state.watermark_us is None else format_us(state.watermark_us),
                    "ids_in_window": len(state.seen),
                    "delivered_total": state.delivered_total,
                }
            )
        shown = {"tenant": tenant} if tenant else {}
        sys.stdout.write(
            jsonutil.dumps({**shown, "location": store.location, "streams": rows}).decode() + "\n"
        )
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="audit-forwarder", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="pull every stream once and ship new events")
    _add_setting_flags(run)
    run.add_argument("--report", action="store_true", help="print the run report as JSON on stderr")
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
    _add_tenant_flag(check)
    check.set_defaults(func=cmd_check)

    demo = sub.add_parser("demo", help="run against the built-in simulator into out/events.ndjson")
    demo.add_argument("--out", default="out", help="output directory (default out)")
    demo.add_argument("--state", default="state", help="state directory (default state)")
    demo.add_argument("--fresh", action="store_true", help="forget earlier demo state and output first")
    demo.set_defaults(func=cmd_demo)

    state = sub.add_parser("state", help="show or reset stored stream state")
    state_sub = state.add_subparsers(dest="state_command", required=True)
    show = state_sub.add_parser("show", help="print every stream's watermark")
    _add_setting_flags(show)
    _add_tenant_flag(show)
    reset = state_sub.add_parser(
        "reset", help="forget a stream's state (it restarts at the initial look-back)"
    )
    reset.add_argument("stream", nargs="?", help="stream key as printed by `state show`")
    reset.add_argument("--all", action="store_true", help="reset every stream")
    _add_setting_flags(reset)
    _add_tenant_flag(reset)
    state.set_defaults(func=cmd_state)

    # Listed for --help only: main() hands `simulate ...` to the simulator's own argument parser.
    sub.add_parser("simulate", help="serve the platform API simulator (simulate --help for its options)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["simulate"]:
        from .simulator import serve

        return serve(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        sys.stderr.write(f"audit-forwarder: {exc}\n")
        return EXIT_CONFIG
    except ForwarderError as exc:
        sys.stderr.write(f"audit-forwarder: {exc}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
