"""`state show` and `check` as tables at a terminal, their machine forms elsewhere."""

from __future__ import annotations

import json

import pytest

from tests.console.terminal import environment, in_terminal
from tests.e2e.helpers import env_for
from tests.test_cli import cli as piped


@pytest.fixture
def ran(sim, tmp_path):
    env = environment(env_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "state")))
    assert piped("run", env=env).returncode == 0
    return env


def test_state_show_at_a_terminal_is_a_table_with_lag_stalest_first(ran):
    state_only = environment({"FORWARDER_STATE": ran["FORWARDER_STATE"]})
    machine = json.loads(piped("state", "show", env=state_only).stdout)
    screen = in_terminal("state", "show", env=state_only)
    assert screen.code == 0
    lines = [line for line in screen.lines() if line]
    assert lines[0] == f"{machine['location']}: {len(machine['streams'])} streams, stalest first"
    assert lines[1].split() == ["stream", "watermark", "lag", "ids", "in", "window", "delivered"]
    rows = lines[2:]
    by_lag = sorted(machine["streams"], key=lambda s: -s["lag_seconds"])
    assert [row.split()[0] for row in rows] == [s["stream"] for s in by_lag]
    first = rows[0].split()
    assert first[1] == by_lag[0]["watermark"][:19] + "Z"
    assert first[-1] == f"{by_lag[0]['delivered_total']:,}"
    assert len({row.index(row.split()[1]) for row in rows}) == 1  # the columns line up
    assert "\x1b[1m" in screen.raw  # bold header on a colour terminal


def test_state_show_json_is_the_machine_form_even_at_a_terminal(ran):
    state_only = environment({"FORWARDER_STATE": ran["FORWARDER_STATE"]})
    screen = in_terminal("state", "show", "--json", env=state_only)
    shown = json.loads(screen.raw)
    keys = {"stream", "watermark", "ids_in_window", "delivered_total", "lag_seconds"}
    assert shown["streams"] and all(set(s) == keys for s in shown["streams"])
    assert [s["stream"] for s in shown["streams"]] == sorted(s["stream"] for s in shown["streams"])
    assert all(s["lag_seconds"] > 0 for s in shown["streams"])


def test_check_at_a_terminal_is_a_table_and_json_keeps_the_lines(sim, tmp_path):
    env = environment(env_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "state")))
    machine = piped("check", env=env)
    assert machine.returncode == 0
    steps = machine.stdout.splitlines()
    screen = in_terminal("check", env=env)
    assert screen.code == 0
    lines = [line for line in screen.lines() if line]
    assert lines[0].split() == ["step", "result"]
    assert len(lines) == 1 + len(steps)
    assert lines[4].split(None, 2) == ["ok", "token", "obtained"]
    probed = next(line for line in lines if "records probed" in line)
    assert probed.split()[1:3] == ["service", "behaviour"]
    assert any(line.split()[:2] == ["ok", "org-wide"] for line in lines)  # its step named, as every row's
    assert [line.split()[1] for line in lines[-3:]] == ["strategy", "org-wide", "org-wide"]
    column = lines[0].index("result")
    assert all(line[column - 1] == " " != line[column] for line in lines[1:])  # results line up
    assert in_terminal("check", "--json", env=env).raw.replace("\r\n", "\n") == machine.stdout


def test_a_failed_check_shows_fail_in_its_row(sim, tmp_path):
    env = environment(
        {
            **env_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "state")),
            "FORWARDER_CLIENT_SECRET": "wrong-secret",
        }
    )
    screen = in_terminal("check", env={**env, "NO_COLOR": "1"})
    assert screen.code == 1 and "\x1b" not in screen.raw
    failed = [line for line in screen.lines() if line.startswith("FAIL")]
    assert len(failed) == 1 and "token request refused" in failed[0]
    assert "wrong-secret" not in screen.raw


def test_a_bad_log_format_is_refused_where_no_other_setting_is_read(tmp_path):
    env = environment({"FORWARDER_STATE": str(tmp_path / "state"), "FORWARDER_LOG_FORMAT": "colour"})
    result = piped("state", "show", env=env)
    assert result.returncode == 2 and "FORWARDER_LOG_FORMAT: choose from auto, json, text" in result.stderr
