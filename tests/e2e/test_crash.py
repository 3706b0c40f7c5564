"""A forwarder process killed at any point (mid-fetch, or with batches of several streams in flight
between their delivery and the state commits) loses nothing: the next run re-sends at most the
batches that were in flight, with the same event ids."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us, parse_iso
from tests.e2e.helpers import HEC_TOKEN, env_for, expected_ids
from tests.receivers.hec import HecReceiver

LOOKBACK_US = 13 * 31 * 86400 * 1_000_000


BATCH = 25
IN_FLIGHT = 4  # HecSink.max_in_flight


def start_run(env, concurrency):
    full = {**os.environ, **env, "FORWARDER_CONCURRENCY": concurrency, "FORWARDER_BATCH_EVENTS": str(BATCH)}
    return subprocess.Popen(
        [sys.executable, "-m", "forwarder", "run"],
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize(
    "kill_at, concurrency",
    [
        (("batch", 1), "1"),
        (("batch", 4), "4"),
        (("batch", 12), "1"),
        (("batch", 12), "4"),
        (("api-request", 9), "4"),
    ],
)
def test_killed_run_loses_nothing_and_resends_at_most_the_batches_in_flight(tmp_path, kill_at, concurrency):
    org = generate_org(9)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        env = env_for(sim.base_url, hec.url, str(tmp_path / "state"))
        proc = start_run(env, concurrency)
        kind, n = kill_at
        if kind == "batch":
            killed = threading.Event()

            def kill_after(accepted):
                # >=: with requests in flight, two replies may read the count after both were stored
                if accepted >= n and not killed.is_set():
                    killed.set()
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
        first_run = {e["event"]["event"]["id"] for e in hec.events()}

        second = start_run(env, concurrency)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 0, err.decode()[-2000:]

        floor = now_us() - LOOKBACK_US
        expected = expected_ids(r for r in org.all_records() if parse_iso(r["created_at"]) >= floor)
        delivered = Counter(e["event"]["event"]["id"] for e in hec.events())
        assert sorted(delivered) == expected, "a record was lost"
        twice = {i for i, c in delivered.items() if c > 1}
        assert all(c <= 2 for c in delivered.values())
        if kind == "batch":
            assert twice <= first_run
            # What a kill can leave unconfirmed: the batches in flight, and accepted batches of the
            # same streams waiting for them to commit in order.
            assert len(twice) <= 2 * IN_FLIGHT * BATCH, "more than the batches in flight was re-sent"
