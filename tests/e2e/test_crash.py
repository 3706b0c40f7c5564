"""A forwarder process killed at any point (mid-fetch, or between a delivery and its state commit)
loses nothing: the next run re-sends at most the batch that was in flight."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter

import pytest

from forwarder.simdata import generate_org
from forwarder.simulator import Simulator
from forwarder.timeutil import now_us, parse_iso
from tests.e2e.helpers import HEC_TOKEN, env_for, expected_ids
from tests.receivers.hec import HecReceiver

LOOKBACK_US = 13 * 31 * 86400 * 1_000_000


def start_run(env):
    full = {**os.environ, **env, "FORWARDER_CONCURRENCY": "1", "FORWARDER_BATCH_EVENTS": "25"}
    return subprocess.Popen(
        [sys.executable, "-m", "forwarder", "run"],
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("kill_at", [("batch", 1), ("batch", 4), ("batch", 12), ("api-request", 9)])
def test_killed_run_loses_nothing_and_resends_at_most_one_batch(tmp_path, kill_at):
    org = generate_org(9)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        env = env_for(sim.base_url, hec.url, str(tmp_path / "state"))
        proc = start_run(env)
        in_flight = []
        kind, n = kill_at
        if kind == "batch":

            def kill_after(accepted):
                if accepted == n:
                    in_flight.extend(e["event"]["event"]["id"] for e in hec.events()[-25:])
                    os.kill(proc.pid, signal.SIGKILL)

            hec.after_accept = kill_after
        else:

            def watch():
                while proc.poll() is None:
                    if len(sim.requests) >= n:
                        os.kill(proc.pid, signal.SIGKILL)
                        return

            threading.Thread(target=watch, daemon=True).start()
        assert proc.wait(timeout=120) == -signal.SIGKILL
        hec.after_accept = None

        second = start_run(env)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 0, err.decode()[-2000:]

        floor = now_us() - LOOKBACK_US
        expected = expected_ids(r for r in org.all_records() if parse_iso(r["created_at"]) >= floor)
        delivered = Counter(e["event"]["event"]["id"] for e in hec.events())
        assert sorted(delivered) == expected, "a record was lost"
        twice = {i for i, c in delivered.items() if c > 1}
        assert all(c <= 2 for c in delivered.values())
        assert twice <= set(in_flight), "only the batch in flight at the kill may be re-sent"
