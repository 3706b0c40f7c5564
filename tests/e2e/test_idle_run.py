"""A run with nothing new (the common case, every few minutes): it still takes and releases the
lease and asks every stream once, but writes no state, syncs nothing to disk and loads no
formatter. Checked on the files and the process, not on timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forwarder import app
from forwarder.app import run_once
from forwarder.normalize import get_formatter
from forwarder.sim.endpoints import AUDITS_PATH
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.state import delivered
from forwarder.state.local import LocalStore, key_to_filename
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, env_for, settings_for
from tests.receivers.hec import HecReceiver

ROOT = Path(__file__).resolve().parents[2]


def snapshot(directory: Path):
    """Every file with its inode and modification time: a rewrite changes one or the other."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in directory.iterdir()}


def test_an_idle_run_writes_no_state_and_syncs_nothing(tmp_path, monkeypatch):
    org = generate_org(5)
    state = tmp_path / "state"
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(sim.base_url, hec.url, str(state))
        first = run_once(settings)
        assert first.ok and first.totals()["shipped"] > 0
        # The next run also probes the org-wide query (refused here: one call) and keeps the verdict
        # in the scheduler document for hours; the runs after it are the idle ones.
        assert run_once(settings).totals()["shipped"] == 0
        before = snapshot(state)
        audits_before = sim.calls()

        synced = []
        real_fsync = os.fsync
        monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
        idle = run_once(settings)

        assert idle.ok and idle.totals()["shipped"] == 0
        assert sim.calls() - audits_before == len(idle.streams)  # one audits call per stream
        assert snapshot(state) == before  # no state file rewritten, and the lease is gone again
        assert not (state / ".lease").exists()
        assert synced == []

        # New records: their streams' states are written and synced as before.
        org.add_activity(5, now_us())
        busy = run_once(settings)
        assert busy.ok and busy.totals()["shipped"] == 5
        changed = {name for name, stamp in snapshot(state).items() if before.get(name) != stamp}
        # and the tenant's delivered-ids index, once per group of accepted batches
        index = "." + delivered.SLOT
        assert changed == {key_to_filename(s.stream) for s in busy.streams if s.shipped} | {index}
        assert len(synced) >= 2 * len(changed)  # the file and its directory, for every commit


def test_a_lease_held_by_a_live_run_still_skips_an_idle_run(tmp_path):
    org = generate_org(3)
    state = tmp_path / "state"
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(sim.base_url, hec.url, str(state))
        assert run_once(settings).ok
        held = LocalStore(str(state)).acquire_lease("elsewhere:1:live", 900)
        calls = sim.calls()
        skipped = run_once(settings)
        assert skipped.skip_reason and "elsewhere:1:live" in skipped.skip_reason
        assert sim.calls() == calls
        held.release()
        assert not (state / ".lease").exists()


def test_an_idle_run_never_loads_the_formatter(tmp_path):
    """In a fresh process: the normalizer's modules are imported by the first record to format."""
    org = generate_org(3)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        env = env_for(sim.base_url, hec.url, str(tmp_path / "state"), FORWARDER_FORMAT="ecs")
        code = (
            "import json, os, sys\n"
            "from forwarder.app import run_once\n"
            "from forwarder.config import load_settings\n"
            "report = run_once(load_settings(dict(os.environ)))\n"
            "print(json.dumps([report.totals()['shipped'], 'forwarder.normalize.ecs' in sys.modules]))\n"
        )

        def run():
            full = {k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_")}
            full.update(env, PYTHONPATH=str(ROOT))
            out = subprocess.run(
                [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=300
            )
            assert out.returncode == 0, out.stderr
            return json.loads(out.stdout.strip().splitlines()[-1])

        shipped, loaded = run()
        assert shipped > 0 and loaded
        assert run() == [0, False]
        assert sim.calls(AUDITS_PATH) > 0


def test_the_formatter_on_demand_is_the_named_one_looked_up_once(monkeypatch):
    looked_up = []
    monkeypatch.setattr(app, "get_formatter", lambda name: looked_up.append(name) or get_formatter(name))
    for name in ("ecs", "cef", "ocsf", "raw"):
        on_demand = app.formatter_on_demand(name)
        assert looked_up[-1:] != [name]  # not before a pass asks for it
        assert on_demand() is on_demand() is get_formatter(name)
        assert looked_up.count(name) == 1
    with pytest.raises(KeyError, match="unknown format 'xml'"):
        app.formatter_on_demand("xml")()
