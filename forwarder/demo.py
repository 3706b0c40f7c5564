"""`audit-forwarder demo`: the simulator on a free loopback port, one run into out/events.ndjson.

The simulated organization is anchored to the time of the first demo (kept in out/demo-anchor.json),
so a second demo sees the same records and reports 0 new.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from . import jsonutil
from .app import run_once
from .config import load_settings
from .observer import IGNORE, RunObserver
from .report import RunReport
from .sim.generate import generate_org
from .sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from .timeutil import format_us, now_us

SEED = 7


def _anchor(out: Path) -> int:
    path = out / "demo-anchor.json"
    if path.exists():
        return int(jsonutil.loads(path.read_bytes())["now_us"])
    anchor = now_us()
    out.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jsonutil.dumps({"seed": SEED, "now_us": anchor}))
    return anchor


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


@dataclass
class DemoRun:
    users: int
    domains: int
    records: int
    in_reach: int  # created inside the first run's look-back (13 months, the API's domain history)
    events: Path
    state: Path
    report: RunReport


def run_demo(out_dir: str, state_dir: str, fresh: bool, observer: RunObserver = IGNORE) -> DemoRun:
    out, state = Path(out_dir).resolve(), Path(state_dir).resolve()
    if fresh:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
    org = generate_org(SEED, now_us=_anchor(out))
    events = out / "events.ndjson"
    with Simulator(org) as sim:
        env = {
            "FORWARDER_API_URL": sim.base_url,
            "FORWARDER_CLIENT_ID": DEMO_CLIENT_ID,
            "FORWARDER_CLIENT_SECRET": DEMO_CLIENT_SECRET,
            "FORWARDER_DOMAINS": ",".join(d.name for d in org.domains if d.destroyed_us is None),
            "FORWARDER_STATE": str(state),
            "FORWARDER_QUARANTINE": str(out / "quarantine"),
            "FORWARDER_SINK": events.as_uri(),
            "FORWARDER_INITIAL_LOOKBACK": "13mo",
            "FORWARDER_LOG_LEVEL": "WARNING",
            # out/events.ndjson holds the audit trail alone: a second demo adds nothing to it
            "FORWARDER_HEALTH_EVENTS": "false",
        }
        settings = load_settings(env)
        report = run_once(settings, observer=observer)
    records = org.all_records()
    floor = format_us(now_us() - settings.initial_lookback_s * 1_000_000)
    in_reach = sum(1 for r in records if r["created_at"] >= floor)  # canonical times sort as text
    return DemoRun(len(org.users), len(org.domains), len(records), in_reach, events, state, report)


def describe(run: DemoRun, stream: TextIO, totals: bool = True) -> None:
    """What the demo did, in words; ``totals`` False when a summary table already showed the counts."""
    report = run.report
    counts = report.totals()
    older = run.records - run.in_reach
    stream.write(
        f"demo: simulator with {run.users} users, {run.domains} domains, {run.records} audit records"
        + (f" ({older} older than the 13-month look-back, so not pulled)" if older else "")
        + "\n"
    )
    if totals:
        stream.write(
            f"      {counts['streams']} streams: fetched {counts['fetched']}, new {counts['new']}, "
            f"shipped {counts['shipped']}, skipped {counts['skipped']}, "
            f"failed streams {counts['failed_streams']}\n"
        )
    stream.write(
        f"      {run.events} now holds {_count_lines(run.events)} ECS events; state in {run.state}\n"
    )
    if totals:
        if report.error:
            stream.write(f"      error: {report.error}\n")
        for s in report.streams:
            if s.error:
                stream.write(f"      {s.stream}: {s.error}\n")
    if counts["new"] == 0 and report.ok:
        stream.write("      nothing new: run `make demo` again after `rm -rf out state` to start over\n")
