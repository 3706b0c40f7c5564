"""The audit-forwarder command: run, check, demo, state show/reset, quarantine list/replay, simulate."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from .. import __version__
from ..errors import ConfigError, ForwarderError
from ..logs import redact
from .options import QUIET_HELP, add_setting_flags, add_tenant_flag
from .quarantine import cmd_quarantine
from .run import cmd_check, cmd_demo, cmd_run
from .state import cmd_state
from .status import EXIT_CONFIG, EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="audit-forwarder", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="pull every stream once and ship new events")
    add_setting_flags(run)
    run.add_argument("--report", action="store_true", help="print the run report as JSON on stderr")
    run.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    run.add_argument(
        "--interval",
        metavar="DURATION",
        help="keep running, one run every DURATION (e.g. 5m) until SIGTERM or Ctrl-C (containers, services)",
    )
    add_tenant_flag(run)
    run.set_defaults(func=cmd_run)

    check = sub.add_parser(
        "check", help="validate settings, get a token, make one audits call; ships nothing"
    )
    add_setting_flags(check)
    check.add_argument(
        "--json", action="store_true", help="one 'ok|FAIL step: result' line per step instead of a table"
    )
    add_tenant_flag(check)
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
    add_setting_flags(show)
    show.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_tenant_flag(show)
    reset = state_sub.add_parser(
        "reset", help="forget a stream's state (it restarts at the initial look-back)"
    )
    reset.add_argument("stream", nargs="?", help="stream key as printed by `state show`")
    reset.add_argument("--all", action="store_true", help="reset every stream")
    add_setting_flags(reset)
    add_tenant_flag(reset)
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
        add_setting_flags(command)
        add_tenant_flag(command)
    quarantine.set_defaults(func=cmd_quarantine)

    # Listed for --help only: main() hands `simulate ...` to the simulator's own argument parser.
    sub.add_parser("simulate", help="serve the platform API simulator (simulate --help for its options)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["simulate"]:
        from ..sim.serve import serve

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
