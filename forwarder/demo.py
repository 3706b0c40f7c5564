"""`audit-forwarder demo`: the simulator on a free loopback port, one run into out/events.ndjson.

The simulated organization is anchored to the time of the first demo (kept in out/demo-anchor.json),
so a second demo sees the same records and reports 0 new.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TextIO

from . import jsonutil
from .app import run_once
from .config import load_settings
from .simdata import generate_org
from .simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from .timeutil import now_us

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


def demo(out_dir: str, state_dir: str, fresh: bool, stream: TextIO) -> int:
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
        }
        report = run_once(load_settings(env))
    totals = report.totals()
    stream.write(
        f"demo: simulator with {len(org.users)} users, {len(org.domains)} domains, "
        f"{len(org.all_records())} audit records\n"
        f"      {totals['streams']} streams: fetched {totals['fetched']}, new {totals['new']}, "
        f"shipped {totals['shipped']}, skipped {totals['skipped']}, "
        f"failed streams {totals['failed_streams']}\n"
        f"      {events} now holds {_count_lines(events)} ECS events; state in {state}\n"
    )
    if report.error:
        stream.write(f"      error: {report.error}\n")
    for s in report.streams:
        if s.error:
            stream.write(f"      {s.stream}: {s.error}\n")
    if totals["new"] == 0 and report.ok:
        stream.write("      nothing new: run `make demo` again after `rm -rf out state` to start over\n")
    return 0 if report.ok else 1
