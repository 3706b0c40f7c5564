"""A forwarder process killed at any point (mid-fetch, or with batches of several streams in flight
between their delivery and the state commits) loses nothing: the next run re-sends exactly what the
killed run delivered without recording it (in a stream's state, or in the tenant's delivered-ids index,
written before the states), with the same event ids, and nothing it recorded.

The two runs deliver to two receivers (one sink URL each, one state): which run sent an event is
known whatever the timing, even for a request the first receiver stores after the kill landed (its
body was on the wire before). Reading the first run's events right after the kill missed such late
requests and made their re-sent ids look foreign to the first run: the flake last session saw."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Dict, List, Set

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.state import delivered
from forwarder.timeutil import now_us, parse_iso
from tests.e2e.helpers import HEC_TOKEN, env_for, expected_ids
from tests.receivers.hec import HecReceiver, Received, event_id

LOOKBACK_US = 13 * 31 * 86400 * 1_000_000

BATCH = 25
IN_FLIGHT = 4  # HecSink.max_in_flight: a sender holds its batch until the batch is committed
# Longer than the look-back, so a stream's state names every id it committed (the default window
# lets the watermark stand for the older ones); one case keeps the default.
WHOLE_WINDOW = "14mo"


def start_run(env: Dict[str, str], concurrency: str) -> subprocess.Popen:
    full = {**os.environ, **env, "FORWARDER_CONCURRENCY": concurrency, "FORWARDER_BATCH_EVENTS": str(BATCH)}
    return subprocess.Popen(
        [sys.executable, "-m", "forwarder", "run"],
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def committed_ids(state_dir: Path) -> Set[str]:
    """Every id the streams' state files list as delivered (read as stored, not through the model)."""
    found: Set[str] = set()
    for path in state_dir.glob("*.json"):
        found.update(json.loads(path.read_text())["seen"])
    return found


def delivered_index(state_dir: Path) -> delivered.DeliveredIndex:
    """The tenant's delivered-ids index as stored (empty before the first write)."""
    path = state_dir / ("." + delivered.SLOT)
    if not path.exists():
        return delivered.DeliveredIndex()
    return delivered.DeliveredIndex.from_doc(json.loads(path.read_text()), str(path))


def by_request(received: List[Received]) -> Dict[int, Set[str]]:
    requests: Dict[int, Set[str]] = {}
    for item in received:
        requests.setdefault(item.request, set()).add(str(event_id(item.envelope)))
    return requests


@pytest.mark.parametrize(
    "kill_at, concurrency, window",
    [
        (("batch", 1), "1", WHOLE_WINDOW),
        (("batch", 4), "4", WHOLE_WINDOW),
        (("batch", 12), "1", WHOLE_WINDOW),
        (("batch", 12), "4", WHOLE_WINDOW),
        (("batch", 12), "4", None),
        (("api-request", 9), "4", WHOLE_WINDOW),
    ],
)
def test_killed_run_loses_nothing_and_resends_only_the_batches_in_flight(
    tmp_path, kill_at, concurrency, window
):
    org = generate_org(9)
    state = tmp_path / "state"
    extra = {} if window is None else {"FORWARDER_LOOKBACK_WINDOW": window}
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec1, HecReceiver(token=HEC_TOKEN) as hec2:
        proc = start_run(env_for(sim.base_url, hec1.url, str(state), **extra), concurrency)
        kind, n = kill_at
        if kind == "batch":
            killed = threading.Event()

            def kill_after(accepted):
                # >=: with requests in flight, two replies may read the count after both were stored
                if accepted >= n and not killed.is_set():
                    killed.set()
                    os.kill(proc.pid, signal.SIGKILL)

            hec1.after_accept = kill_after
        else:

            def watch():
                while proc.poll() is None:
                    if len(sim.requests) >= n:
                        os.kill(proc.pid, signal.SIGKILL)
                        return

            threading.Thread(target=watch, daemon=True).start()
        assert proc.wait(timeout=120) == -signal.SIGKILL
        committed = committed_ids(state)  # the killed process writes nothing more
        index = delivered_index(state)

        second = start_run(env_for(sim.base_url, hec2.url, str(state), **extra), concurrency)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 0, err.decode()[-2000:]

        # Read after the second run: any request of the first whose body was on the wire is stored.
        first_requests = by_request(hec1.received())
        first_run = set().union(*first_requests.values())
        sent_again = Counter(str(i) for i in hec2.event_ids())
        committed |= {i for i in first_run if index.holds(i)}  # recorded there, as the killed run left it

    floor = now_us() - LOOKBACK_US
    expected = expected_ids(r for r in org.all_records() if parse_iso(r["created_at"]) >= floor)
    assert committed <= first_run, (
        f"the state moved over {len(committed - first_run)} events the sink never got: "
        f"{sorted(committed - first_run)[:3]}"
    )
    delivered = first_run | set(sent_again)
    lost, foreign = set(expected) - delivered, delivered - set(expected)
    assert not lost, f"{len(lost)} records were lost: {sorted(lost)[:3]}"
    assert not foreign, (
        f"{len(foreign & first_run)} ids of the first run and {len(foreign - first_run)} of the second "
        f"match no record: event ids are not stable ({sorted(foreign)[:3]})"
    )
    assert max(sent_again.values(), default=1) == 1, "the second run sent an event twice itself"
    resent = first_run & set(sent_again)
    assert not resent & committed, (
        f"{len(resent & committed)} committed events were re-sent: {sorted(resent & committed)[:3]}"
    )
    in_flight = {number: ids for number, ids in first_requests.items() if ids - committed}
    carrying = {number for number, ids in first_requests.items() if ids & resent}
    described = (
        f"{len(resent)} re-sent from first-run requests {sorted(carrying)}; requests holding uncommitted "
        f"events: {sorted(in_flight)} of {len(first_requests)}; {len(committed)} ids committed"
    )
    assert len(carrying) <= IN_FLIGHT, (
        "re-sent events came from more batches than are in flight: " + described
    )
    if window is not None:  # the state lists every committed id: in flight is known exactly
        assert resent == first_run - committed, "re-sent is not what was delivered uncommitted: " + described
        assert len(in_flight) <= IN_FLIGHT, (
            "more batches were delivered uncommitted than in flight: " + described
        )
