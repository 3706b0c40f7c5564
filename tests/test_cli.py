"""The audit-forwarder command as users run it: a subprocess with environment variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.state.local import open_local
from tests.e2e.helpers import cli, env_for


def test_bad_configuration_fails_before_any_network_call_naming_each_variable():
    result = cli("run", env={"FORWARDER_API_URL": "http://api.example.com", "FORWARDER_FORMAT": "xml"})
    assert result.returncode == 2
    for name in ("FORWARDER_API_URL", "FORWARDER_CLIENT_ID", "FORWARDER_CLIENT_SECRET", "FORWARDER_FORMAT"):
        assert name in result.stderr


def test_flags_override_the_environment():
    result = cli("run", "--format", "yaml", env={"FORWARDER_API_URL": "https://x.example"})
    assert result.returncode == 2 and "FORWARDER_FORMAT: choose from" in result.stderr


def test_demo_twice_writes_the_events_once(tmp_path):
    first = cli("demo", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    lines = (tmp_path / "out" / "events.ndjson").read_text().splitlines()
    assert len(lines) >= 1000
    # every record the simulator holds is either an event or said to lie outside the look-back
    head = first.stdout.splitlines()[0]
    total = int(head.split(" audit records")[0].rsplit(" ", 1)[1])
    older = int(head.split("(")[1].split(" older than the 13-month look-back")[0]) if "(" in head else 0
    assert total - older == len(lines), head
    events = [json.loads(line) for line in lines]
    assert len({e["event"]["id"] for e in events}) == len(events)
    second = cli("demo", cwd=tmp_path)
    assert second.returncode == 0 and "new 0," in second.stdout
    assert len((tmp_path / "out" / "events.ndjson").read_text().splitlines()) == len(lines)


@pytest.fixture
def sim():
    with Simulator(generate_org(2)) as s:
        yield s


def test_check_reports_each_step_and_ships_nothing(sim, tmp_path):
    sink = (tmp_path / "events.ndjson").as_uri()
    result = cli("check", env=env_for(sim.base_url, sink, str(tmp_path / "state")))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   token: obtained" in result.stdout
    assert "paging yes, order oldest-first, start_date yes, end_date yes" in result.stdout
    assert "ok   strategy: ascending+start_date" in result.stdout
    assert f"ok   sink: file {tmp_path / 'events.ndjson'}: not there yet" in result.stdout
    assert not (tmp_path / "events.ndjson").exists()  # its directory proven writable; nothing created
    bad = cli(
        "check",
        env={**env_for(sim.base_url, sink, str(tmp_path / "s")), "FORWARDER_CLIENT_SECRET": "nope-nope"},
    )
    assert bad.returncode == 1 and "FAIL token: " in bad.stdout and "nope-nope" not in bad.stdout + bad.stderr


def test_state_show_and_reset(sim, tmp_path):
    env = env_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "state"))
    assert cli("run", env=env).returncode == 0
    state_only = {"FORWARDER_STATE": env["FORWARDER_STATE"]}  # no API settings needed to inspect
    shown = json.loads(cli("state", "show", env=state_only).stdout)
    keys = [s["stream"] for s in shown["streams"]]
    assert keys and all(s["watermark"] for s in shown["streams"])
    assert (tmp_path / "state" / ".delivered-ids").exists()
    open_local(str(tmp_path / "state")).slot("pending-objects").put({"schema": 1, "keys": ["k"]}, None)
    reset = cli("state", "reset", keys[0], env=env)
    assert reset.returncode == 0 and keys[0] in reset.stdout
    # The index of delivered ids goes too: the stream's recent records are re-sent as well.
    assert (
        "index of delivered event ids" in reset.stdout
        and not (tmp_path / "state" / ".delivered-ids").exists()
    )
    # And the pending objects: the next run would count their records delivered, not send them again.
    assert "pending objects" in reset.stdout and not (tmp_path / "state" / ".pending-objects").exists()
    assert keys[0] not in [s["stream"] for s in json.loads(cli("state", "show", env=env).stdout)["streams"]]
    assert cli("state", "reset", "user/nobody@example.com", env=env).returncode == 1


def test_run_exit_code_says_a_stream_failed(sim, tmp_path):
    env = env_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "state"))
    sim.malform_next(1, kind="wrong-shape")
    result = cli("run", "--report", env=env)
    assert result.returncode == 1
    report = json.loads(result.stderr.strip().splitlines()[-1])
    failed = [s for s in report["streams"] if s["error"]]
    assert len(failed) == 1 and "holds no" in failed[0]["error"]


def test_simulate_serves_the_api_until_interrupted():
    import re
    import signal

    import requests

    proc = subprocess.Popen(
        [sys.executable, "-m", "forwarder", "simulate", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline()).group(0)
        token = requests.post(
            f"{url}/v1/ep/token",
            data={"client_id": "demo-client", "client_secret": "demo-secret"},
            timeout=10,
        )
        assert token.status_code == 200 and token.json()["token_type"] == "Bearer"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0


def test_run_with_an_interval_repeats_until_sigterm(sim, tmp_path):
    import signal
    import time

    sink = tmp_path / "e.ndjson"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_")}
    env.update(env_for(sim.base_url, sink.as_uri(), str(tmp_path / "state")))
    proc = subprocess.Popen([sys.executable, "-m", "forwarder", "run", "--interval", "1s"], env=env)
    try:

        def listings():
            return sum(r.path.endswith("/users") for r in sim.requests)

        def audits():
            return sum(r.path.endswith("/audits") for r in sim.requests)

        def wait_for(condition):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not condition():
                time.sleep(0.05)
            assert condition()

        # Once the first run shipped and released its lease, its audits calls are made.
        lease = tmp_path / "state" / ".lease"
        wait_for(lambda: sink.exists() and sink.read_text().count("\n") > 0 and not lease.exists())
        first_run, listed = audits(), listings()
        wait_for(lambda: audits() > first_run)  # a second run began
        # The token and the users list (FORWARDER_USERS_CACHE) outlive a run: the later runs reuse them.
        assert sum(r.path.endswith("/token") for r in sim.requests) == 1
        assert listings() == listed
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    ids = [json.loads(line)["event"]["id"] for line in sink.read_text().splitlines()]
    assert ids and len(ids) == len(set(ids))


def test_an_empty_quarantine_list_says_so_and_keeps_stdout_for_json(tmp_path):
    env = {"FORWARDER_QUARANTINE": str(tmp_path / "q")}
    listed = cli("quarantine", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == "" and f"no quarantined entries in {tmp_path / 'q'}" in listed.stderr


BAD_LOCATIONS = [
    ("FORWARDER_STATE", "file://remotehost/state"),
    ("FORWARDER_STATE", "s3://"),
    ("FORWARDER_STATE", "dynamodb://"),
    ("FORWARDER_QUARANTINE", "file://remotehost/quarantine"),
    ("FORWARDER_SINK", "file://remotehost/events.ndjson"),
]
# every command with a location it reads
COMMANDS = [(["run"], v) for v in BAD_LOCATIONS] + [(["check"], v) for v in BAD_LOCATIONS]
COMMANDS += [(["state", "show"], v) for v in BAD_LOCATIONS if v[0] == "FORWARDER_STATE"]
COMMANDS += [(["quarantine", "list"], v) for v in BAD_LOCATIONS if v[0] == "FORWARDER_QUARANTINE"]


@pytest.mark.parametrize("command, location", COMMANDS)
def test_a_location_on_another_host_is_a_configuration_error_of_its_variable(tmp_path, command, location):
    """Before: ``FORWARDER_STATE=file://remotehost/state`` ended in a raw ValueError traceback (exit 1)."""
    variable, value = location
    env = env_for("https://127.0.0.1:9", "stdout", str(tmp_path / "state"), FORWARDER_USERS="a@b.example")
    env[variable] = value
    result = cli(*command, env=env, cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2 and variable in result.stderr, (result.returncode, result.stderr)
    assert not (tmp_path / "remotehost").exists()


def test_interval_runs_start_every_interval_and_an_overrun_skips_the_starts_it_missed():
    from forwarder.cli.run import next_start

    assert next_start(100.0, 10.0, 104.0) == 110.0  # 10 s after the last start, not after its end
    assert next_start(100.0, 10.0, 110.0) == 110.0
    assert next_start(100.0, 10.0, 125.0) == 130.0  # overran two starts: the next on the grid
