"""A stop (SIGTERM, as docker stop, systemd and Lambda's shutdown send it) in the middle of a run of
the command, with the state in a local directory, S3 or DynamoDB (the moto server): the run ends with
exit 0 and its report, leaves no lease behind, and the next run delivers the rest, nothing twice."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from tests.aws.conftest import make_bucket, make_table
from tests.e2e.helpers import cli, env_for


@pytest.fixture
def sim():
    with Simulator(generate_org(2)) as s:
        yield s


def state_uri(kind: str, tmp_path: Path) -> str:
    if kind == "local":
        return str(tmp_path / "state")
    if kind == "s3":
        return f"s3://{make_bucket()}/state"
    return f"dynamodb://{make_table()}"


def run_env(sim: Simulator, tmp_path: Path, state: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_")}  # the moto server's AWS_*
    sink = (tmp_path / "events.ndjson").as_uri()
    env.update(env_for(sim.base_url, sink, state, FORWARDER_QUARANTINE=str(tmp_path / "quarantine")))
    env["FORWARDER_CONCURRENCY"] = "1"
    return env


def shipped(tmp_path: Path) -> List[str]:
    path = tmp_path / "events.ndjson"
    return (
        [json.loads(line)["event"]["id"] for line in path.read_text().splitlines()] if path.exists() else []
    )


def start_run(env: Dict[str, str]) -> subprocess.Popen:
    """``run --report``, its stderr (logs, then the report) to read."""
    args = [sys.executable, "-m", "forwarder", "run", "--report"]
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def run_until_shipped_then(sig: int, env: Dict[str, str], tmp_path: Path) -> Tuple[int, str]:
    """``run --report``, sent ``sig`` once its first batch is in the sink; (exit status, stderr)."""
    proc = start_run(env)
    try:
        while not shipped(tmp_path) and proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(0.02)
        assert proc.poll() is None, "the run ended before it could be stopped: make it slower"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, err


@pytest.mark.parametrize("kind", ["local", "s3", "dynamodb"])
def test_sigterm_mid_run_releases_the_lease_reports_and_the_next_run_sends_the_rest_once(
    aws, sim, tmp_path, kind
):
    sim.latency_seconds = 0.1  # 25 streams one after the other, 0.1 s a request: stopped early on
    env = run_env(sim, tmp_path, state_uri(kind, tmp_path))
    code, err = run_until_shipped_then(signal.SIGTERM, env, tmp_path)
    assert code == 0, err
    assert "Traceback" not in err
    report = json.loads(err.strip().splitlines()[-1])
    assert report["ok"] and report["skipped"] is None
    stopped = [s for s in report["streams"] if s["stopped"]]
    assert stopped or report["not_started"], "the stop came after the run: nothing to show"
    first = shipped(tmp_path)
    assert first and len(first) == len(set(first))

    sim.latency_seconds = 0.0
    following = cli("run", "--report", env=env)
    assert following.returncode == 0, following.stderr  # not 75: no lease was left behind
    again = cli("run", "--report", env=env)
    assert again.returncode == 0 and json.loads(again.stderr.strip().splitlines()[-1])["totals"]["new"] == 0
    ids = shipped(tmp_path)
    assert len(ids) == len(set(ids)), "an event was sent twice"
    everything = cli(
        "run", env={**env, "FORWARDER_STATE": str(tmp_path / "fresh"), "FORWARDER_SINK": "stdout"}
    )
    assert sorted(ids) == sorted(json.loads(line)["event"]["id"] for line in everything.stdout.splitlines())


def test_sigterm_during_a_state_write_lets_it_finish_without_a_traceback(aws, sim, tmp_path, monkeypatch):
    """The stop arrives while the S3 PUT of a stream's state (its batch accepted by the sink) is on the
    wire: the write is not cut, so the batch is not sent twice, and nothing is logged as a crash."""
    from tests.receivers.holding_relay import HoldingRelay

    sim.latency_seconds = 0.05
    with HoldingRelay(aws) as relay:
        monkeypatch.setenv("AWS_ENDPOINT_URL", relay.http_url)
        env = run_env(sim, tmp_path, state_uri("s3", tmp_path))
        relay.hold_next("PUT", "/state/streams/")
        proc = start_run(env)
        try:
            assert relay.held.wait(60), "no state was written"
            proc.send_signal(signal.SIGTERM)
            lines = []
            for line in proc.stderr:  # the stop is handled (and any cut made) before the write goes on
                lines.append(line)
                if "stop requested" in line:
                    break
            time.sleep(0.5)  # twice the watchdog's look-around: a write the stop cuts is cut by now
            relay.release()
            _, rest = proc.communicate(timeout=60)
        finally:
            relay.release()
            proc.kill()
        err = "".join(lines) + rest
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "state not saved" not in err
        report = json.loads(err.strip().splitlines()[-1])
        assert report["ok"] and report["totals"]["shipped"] > 0
        following = cli("run", env=env)
        assert following.returncode == 0, following.stderr
    ids = shipped(tmp_path)
    assert len(ids) == len(set(ids)), "the batch whose state write was in flight was sent twice"
