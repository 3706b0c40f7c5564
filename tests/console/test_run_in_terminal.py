"""`run` and `demo` as a person at a terminal sees them, and as a pipe sees them."""

from __future__ import annotations

import json
import re
from dataclasses import fields

import pytest

from forwarder.report import StreamReport
from tests.console.terminal import environment, in_terminal
from tests.e2e.helpers import env_for
from tests.test_cli import cli as piped

FRAME = re.compile(r"^streams (\d+)/(\d+)  fetched ([\d,]+)  shipped ([\d,]+)  .*API calls ([\d,]+)")
TOTALS_HEAD = ["streams", "fetched", "new", "shipped", "quarantined", "failed"]


def run_env(sim, tmp_path, **extra):
    base = env_for(sim.base_url, (tmp_path / "events.ndjson").as_uri(), str(tmp_path / "state"))
    return environment({**base, "FORWARDER_CONCURRENCY": "1", **extra})


def number(text: str) -> int:
    return int(text.replace(",", ""))


def summary_totals(lines):
    """The numbers under the summary table's header row."""
    head = next(i for i, line in enumerate(lines) if line.split() == TOTALS_HEAD)
    return dict(zip(TOTALS_HEAD, (number(v) for v in lines[head + 1].split())))


def report_line(lines):
    return json.loads(next(line for line in lines if line.startswith('{"ok"')))


def test_a_run_at_a_terminal_shows_live_progress_and_a_summary_matching_the_report(sim, tmp_path):
    sim.latency_seconds = 0.03  # each request takes a while, so the line is redrawn during the run
    screen = in_terminal("run", "--report", env=run_env(sim, tmp_path))
    assert screen.code == 0, screen.plain
    frames = [m.groups() for m in map(FRAME.match, screen.frames()) if m]
    assert len(set(frames)) >= 3, screen.frames()  # the line updates, it is not printed once
    done = [int(f[0]) for f in frames]
    fetched = [number(f[2]) for f in frames]
    assert done == sorted(done) and fetched == sorted(fetched)
    report = report_line(screen.lines())
    totals = report["totals"]
    assert {int(f[1]) for f in frames} == {totals["streams"]}
    assert summary_totals(screen.lines()) == {
        "streams": totals["streams"],
        "fetched": totals["fetched"],
        "new": totals["new"],
        "shipped": totals["shipped"],
        "quarantined": totals["quarantined"],
        "failed": totals["failed_streams"],
    }
    assert totals["shipped"] > 0
    head = next(line for line in screen.lines() if line.startswith("run finished"))
    assert f"{len(sim.requests):,} API calls" in head  # every request the simulator answered
    stalest = max(report["streams"], key=lambda s: s["lag_seconds"])
    assert any(line.startswith(f"  stalest stream: {stalest['stream']}, ") for line in screen.lines())
    assert "\x1b[32m" in screen.raw  # colour on a colour terminal
    assert not [line for line in screen.lines() if line.startswith('{"time"')]  # no JSON log lines


def test_a_failed_stream_and_warnings_are_readable_lines_with_the_reason(sim, tmp_path):
    sim.fail_next(1, 500, retry_after=0)  # retried: a warning
    sim.fail_next(1, 403, path_prefix="/v1/cp/audits")  # not retried: the first stream fails
    screen = in_terminal("run", "--report", env=run_env(sim, tmp_path))
    assert screen.code == 1
    lines = screen.lines()
    assert any(
        re.match(r"^warning: api GET /v1/cp/audits failed, retrying \(error=HTTP 500.*wait_s=", x)
        for x in lines
    )
    report = report_line(lines)
    failed = [s for s in report["streams"] if s["error"]]
    assert len(failed) == 1
    assert f"error: stream failed (stream={failed[0]['stream']}, error={failed[0]['error']})" in lines
    assert any(x.startswith("run failed after ") for x in lines)
    reasons = lines.index(next(x for x in lines if x.split() == ["failed", "stream", "reason"]))
    assert lines[reasons + 1].split(None, 1) == [failed[0]["stream"], failed[0]["error"]]
    assert summary_totals(lines)["failed"] == 1


@pytest.mark.parametrize("no_color", ["1", ""])
def test_no_color_in_any_value_turns_colour_off_but_keeps_progress_and_summary(sim, tmp_path, no_color):
    sim.latency_seconds = 0.01
    screen = in_terminal("run", env=run_env(sim, tmp_path, NO_COLOR=no_color))
    assert screen.code == 0
    assert "\x1b" not in screen.raw
    assert any(FRAME.match(f) for f in screen.frames())
    assert summary_totals(screen.lines())["shipped"] > 0


def test_a_dumb_terminal_gets_no_colour(sim, tmp_path):
    screen = in_terminal("run", env={**run_env(sim, tmp_path), "TERM": "dumb"})
    assert screen.code == 0 and "\x1b" not in screen.raw and summary_totals(screen.lines())


def test_between_interval_runs_the_line_says_when_the_next_starts(sim, tmp_path):
    screen = in_terminal("run", "--interval", "1h", env=run_env(sim, tmp_path), terminate_on="next run at ")
    assert screen.code == 0
    waiting = [f for f in screen.frames() if f.startswith("next run at ")]
    assert waiting and waiting[0].endswith("(every 1h 0m; Ctrl-C or SIGTERM stops)")
    assert summary_totals(screen.lines())["shipped"] > 0
    assert screen.lines()[-1] == ""  # the waiting line is wiped on the way out


def test_quiet_prints_nothing_on_success_and_only_errors_on_failure(sim, tmp_path):
    sim.latency_seconds = 0.01
    quiet = in_terminal("run", "--quiet", env=run_env(sim, tmp_path))
    assert quiet.code == 0 and quiet.raw == ""
    sim.fail_next(1, 500, retry_after=0)  # a warning: not shown
    sim.fail_next(1, 403)
    state = str(tmp_path / "other-state")
    failing = in_terminal("run", "--quiet", env=run_env(sim, tmp_path, FORWARDER_STATE=state))
    assert failing.code == 1
    shown = [line for line in failing.lines() if line]
    assert len(shown) == 1 and shown[0].startswith("error: stream failed (stream=")


def test_quiet_in_json_mode_keeps_only_error_lines(sim, tmp_path):
    sim.fail_next(1, 403)
    result = piped("run", "--quiet", env=run_env(sim, tmp_path))
    assert result.returncode == 1
    logged = [json.loads(line) for line in result.stderr.splitlines()]
    assert logged and {entry["level"] for entry in logged} == {"ERROR"}


STANDARD_KEYS = {"time", "level", "logger", "message"}


def assert_todays_json_lines(stderr: str) -> None:
    """The JSON log lines of a run as they were before the terminal output existed."""
    assert "\r" not in stderr and "\x1b" not in stderr
    logged = [json.loads(line) for line in stderr.splitlines()]
    finished = [e for e in logged if e["message"] == "stream finished"]
    assert finished and all(
        set(e) == STANDARD_KEYS | {f.name for f in fields(StreamReport)} for e in finished
    )
    assert all(e["level"] == "INFO" and e["logger"] == "forwarder.app" for e in finished)
    (run,) = [e for e in logged if e["message"] == "run finished"]
    assert set(run) == STANDARD_KEYS | {
        "ok",
        "fetched",
        "new",
        "shipped",
        "quarantined",
        "skipped",
        "invalid",
        "future",
        "late",
        "api_calls",
        "full_scan_streams",
        "streams",
        "failed_streams",
        "max_lag_seconds",
        "not_started",
        "not_due",
        "stop_reason",
    }
    assert run["streams"] == len(finished) and run["ok"] is True


def test_piped_output_is_exactly_the_json_log_lines(sim, tmp_path):
    result = piped("run", env=run_env(sim, tmp_path))
    assert result.returncode == 0 and result.stdout == ""
    assert_todays_json_lines(result.stderr)


def test_json_format_at_a_terminal_is_the_same_json_lines(sim, tmp_path):
    screen = in_terminal("run", env=run_env(sim, tmp_path, FORWARDER_LOG_FORMAT="json"))
    assert screen.code == 0
    assert_todays_json_lines(screen.raw.replace("\r\n", "\n"))


def test_text_format_in_a_pipe_gives_readable_lines_without_a_progress_line(sim, tmp_path):
    result = piped("run", env=run_env(sim, tmp_path, FORWARDER_LOG_FORMAT="text"))
    assert result.returncode == 0 and "\r" not in result.stderr and "\x1b" not in result.stderr
    assert result.stderr.startswith("run finished in ")
    assert summary_totals(result.stderr.splitlines())["shipped"] > 0


def test_a_bad_log_format_is_a_configuration_error(sim, tmp_path):
    result = piped("run", env=run_env(sim, tmp_path, FORWARDER_LOG_FORMAT="pretty"))
    assert result.returncode == 2 and "FORWARDER_LOG_FORMAT: choose from auto, json, text" in result.stderr


def test_demo_at_a_terminal_shows_progress_and_the_summary_then_where_the_events_are(tmp_path):
    screen = in_terminal("demo", env=environment({}), cwd=str(tmp_path))
    assert screen.code == 0, screen.plain
    lines = screen.lines()
    totals = summary_totals(lines)
    events = (tmp_path / "out" / "events.ndjson").read_text().splitlines()
    assert totals["shipped"] == totals["new"] == len(events) > 0
    assert any(FRAME.match(f) or f.startswith("planning") for f in screen.frames())
    assert any(f"now holds {len(events)} ECS events" in line for line in lines)
    assert not any("streams: fetched" in line for line in lines)  # the table replaced that line
    again = in_terminal("demo", "--quiet", env=environment({}), cwd=str(tmp_path))
    assert again.code == 0 and again.raw == ""


def test_events_on_the_same_terminal_are_not_run_into_by_a_progress_line(sim, tmp_path):
    sim.latency_seconds = 0.01
    screen = in_terminal("run", env=run_env(sim, tmp_path, FORWARDER_SINK="stdout"))
    assert screen.code == 0, screen.plain
    events = [line for line in screen.lines() if line.lstrip("\r").startswith("{")]
    assert len(events) > 100
    for line in events:  # each event a whole JSON line, nothing drawn into it
        json.loads(line.lstrip("\r"))
    assert not [f for f in screen.frames() if FRAME.match(f)]
    assert any(line.startswith("run finished") for line in screen.lines())
