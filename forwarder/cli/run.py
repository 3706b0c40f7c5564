"""The commands that run the forwarder: run (once, or every --interval), check and demo."""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import time
from dataclasses import replace

from .. import jsonutil, stop
from ..console.session import Console
from ..console.style import is_terminal
from ..logs import redact
from ..tenants import Tenant
from ..timeutil import parse_duration
from .options import env_of, log_format_of, settings_of, tables, tenants_of
from .status import EXIT_FAILED, EXIT_OK, run_status, worst


def cmd_run(args: argparse.Namespace) -> int:
    from ..app import run_once
    from ..multitenant import run_tenants, tenant_concurrency

    tenants = tenants_of(args)
    targets = tenants if tenants is not None else [Tenant("", settings_of(args), "")]
    concurrency = tenant_concurrency(env_of(args))
    interval = parse_duration(args.interval) if args.interval else 0
    if interval:  # the schedule's interval: the run budget and the revisit bounds are sized to it
        targets = [replace(t, settings=replace(t.settings, schedule_interval_s=interval)) for t in targets]
    first = targets[0].settings
    events_here = first.sink.uri == "stdout" and is_terminal(sys.stdout)
    console = Console(
        first.log_format,
        first.log_level,
        os.environ,
        sys.stderr,
        quiet=args.quiet,
        shares_terminal=events_here,
    )
    # SIGTERM (docker stop, systemd) and Ctrl-C end the loop: the run in progress starts nothing new,
    # commits what it shipped, releases its lease, and the process exits with that run's status.
    should_stop = stop.install()
    try:
        while True:
            began = time.monotonic()
            if tenants is None:
                # a single organization runs here, so its errors reach main() as they always did
                reports = {
                    "": run_once(first, should_stop=should_stop, observer=console.progress(), runtime="cli")
                }
                console.summary(reports[""])
            else:
                console.tenants_started(len(targets))
                reports = run_tenants(
                    targets,
                    lambda tenant: run_once(
                        tenant.settings,
                        should_stop=should_stop,
                        observer=console.tenant_progress(tenant.name),
                        runtime="cli",
                        tenant=tenant.name,
                    ),
                    concurrency,
                )
                console.tenants_summary(reports)
            codes = []
            for name, report in reports.items():
                if args.report:
                    shown = {"tenant": name, **report.to_dict()} if name else report.to_dict()
                    sys.stderr.write(redact(jsonutil.dumps(shown).decode()) + "\n")
                codes.append(run_status(report))
            code = worst(codes)
            if not interval:
                return code
            wait = next_start(began, interval, time.monotonic()) - time.monotonic()
            console.waiting(wait, interval)
            if stop.wait(wait):
                return code
    finally:
        console.close()


def next_start(began: float, interval: float, now: float) -> float:
    """When the next run of ``run --interval`` starts: a run starts every ``interval`` from the
    first; one that overran skips the starts it missed rather than starting at once behind them."""
    return began + interval * max(1, math.ceil((now - began) / interval))


def cmd_check(args: argparse.Namespace) -> int:
    from ..check import check

    tenants = tenants_of(args)
    targets = tenants if tenants is not None else [Tenant("", settings_of(args), "")]
    first = targets[0].settings
    console = Console(first.log_format, first.log_level, os.environ, sys.stderr)
    style = tables(first.log_format, args)
    passed = []
    for tenant in targets:
        if tenant.name:
            sys.stdout.write(f"tenant {tenant.name}:\n")
        if style is None:
            passed.append(check(tenant.settings, sys.stdout))
            continue
        from ..console.views import check_view

        lines = io.StringIO()
        console.screen.status("checking settings, state, sink, token and the first audits page ...")
        passed.append(check(tenant.settings, lines))
        console.screen.clear()
        sys.stdout.write(check_view(lines.getvalue(), style))
    return EXIT_OK if all(passed) else EXIT_FAILED


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo import describe, run_demo

    stop.install()  # Ctrl-C ends the demo's run the same clean way
    level = os.environ.get("FORWARDER_LOG_LEVEL", "WARNING")
    console = Console(log_format_of(os.environ), level, os.environ, sys.stderr, quiet=args.quiet)
    try:
        run = run_demo(args.out, args.state, args.fresh, observer=console.progress())
        console.summary(run.report)
    finally:
        console.close()
    if not args.quiet:
        describe(run, sys.stdout, totals=not console.text)
    return EXIT_OK if run.report.ok else EXIT_FAILED
