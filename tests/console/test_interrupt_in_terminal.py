"""Ctrl-C typed at the terminal of a run: the first stops it the clean way within a page (nothing new
starts, the lease is released, the summary and report are shown, exit 0); a second one during that
shutdown ends it at once, still committing nothing the sink did not accept."""

from __future__ import annotations

import json

from tests.console.terminal import environment, in_terminal
from tests.console.test_run_in_terminal import report_line
from tests.e2e.helpers import cli, env_for

CTRL_C = b"\x03"


def run_env(sim, tmp_path, state=None, **extra):
    base = env_for(sim.base_url, (tmp_path / "events.ndjson").as_uri(), state or str(tmp_path / "state"))
    return environment({**base, "FORWARDER_CONCURRENCY": "1", **extra})


def shipped(tmp_path):
    lines = (tmp_path / "events.ndjson").read_text().splitlines()
    return [json.loads(line)["event"]["id"] for line in lines]


def every_id(sim, tmp_path):
    fresh = env_for(sim.base_url, "stdout", str(tmp_path / "fresh"))
    return sorted(json.loads(line)["event"]["id"] for line in cli("run", env=fresh).stdout.splitlines())


def test_ctrl_c_stops_the_run_within_a_page_and_ends_it_cleanly(sim, tmp_path):
    sim.latency_seconds = 0.05  # 25 streams one at a time: Ctrl-C comes while most are still to run
    env = run_env(sim, tmp_path)
    screen = in_terminal("run", "--report", env=env, keys=[(r"streams [1-9]\d*/", CTRL_C)])
    assert screen.code == 0, screen.plain
    assert "Traceback" not in screen.plain and "KeyboardInterrupt" not in screen.plain
    report = report_line(screen.lines())
    assert report["ok"]
    assert len(report["not_started"]) > 10, "the streams after Ctrl-C ran all the same"
    assert any(line.startswith("run finished") for line in screen.lines())  # the summary, as always

    following = cli("run", env=env)
    assert following.returncode == 0, following.stderr  # not 75: the lease was released
    ids = shipped(tmp_path)
    assert len(ids) == len(set(ids)) and sorted(ids) == every_id(sim, tmp_path)


def test_a_second_ctrl_c_ends_a_shutdown_held_by_a_state_write_at_once(aws, sim, tmp_path, monkeypatch):
    """The first Ctrl-C finds a state write in flight (an S3 PUT the relay holds) and waits for it, as
    it must; the second cuts it: the run ends, its stream stopped (its batch is sent again next
    run), the lease released; nothing is lost."""
    from tests.aws.conftest import make_bucket
    from tests.receivers.holding_relay import HoldingRelay

    sim.latency_seconds = 0.03
    with HoldingRelay(aws) as relay:
        monkeypatch.setenv("AWS_ENDPOINT_URL", relay.http_url)
        env = run_env(sim, tmp_path, state=f"s3://{make_bucket()}/state", FORWARDER_LOG_LEVEL="INFO")
        relay.hold_next("PUT", "/state/streams/")
        try:
            # The held write is on the wire once its stream is reported done ("streams 1/").
            keys = [(r"streams [1-9]\d*/", CTRL_C), ("stop requested", CTRL_C)]
            screen = in_terminal("run", "--report", env=env, keys=keys, timeout=60)
        finally:
            relay.release()
        assert screen.code == 0, screen.plain
        assert "Traceback" not in screen.plain and "stop requested again" in screen.plain
        report = report_line(screen.lines())
        assert report["ok"] and report["streams"][0]["stopped"]
        following = cli("run", env=env)
        assert following.returncode == 0, following.stderr  # not 75: the lease was released
    ids = shipped(tmp_path)
    assert sorted(set(ids)) == every_id(sim, tmp_path)  # the cut write's batch went again: not lost
