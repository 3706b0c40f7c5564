"""`audit-forwarder run` and `check` as users run them, against a simulator serving hostile records,
echoing secrets and trickling, and against bad configuration: nothing lost, no state past an
undelivered record, no traceback, no hang, no secret in any output, and an exit code that says what
happened."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from forwarder.sim.endpoints import AUDITS_PATH
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, Simulator
from forwarder.sim.styles import ServiceStyle
from forwarder.timeutil import format_us, now_us
from tests.e2e.helpers import canonical_id, cli, env_for

ORG_SEED = 3


@pytest.fixture
def sim():
    with Simulator(generate_org(ORG_SEED)) as s:
        yield s


def one_user(sim) -> str:
    return sim.org.users[0].email


def run(sim, tmp_path, *args, **extra):
    env = env_for(sim.base_url, (tmp_path / "events.ndjson").as_uri(), str(tmp_path / "state"), **extra)
    env.setdefault("FORWARDER_USERS", one_user(sim))
    env.setdefault("FORWARDER_OBJECT_TYPES", "user")
    result = cli("run", "--report", *args, env=env)
    assert "Traceback" not in result.stderr, result.stderr
    report = json.loads(result.stderr.strip().splitlines()[-1])
    return result, report


def shipped(tmp_path):
    path = tmp_path / "events.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def quarantined(tmp_path):
    path = Path(str(tmp_path / "state") + "-quarantine") / "quarantine.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def record(sim, created_at, **fields):
    return {
        "user": one_user(sim),
        "action": "login",
        "filterable_action": "user.login",
        "object": one_user(sim),
        "created_at": created_at,
        **fields,
    }


# --- item 2: a future created_at --------------------------------------------------------------------


@pytest.mark.parametrize(
    "style, strategy, extra",
    [
        ({}, "ascending+start_date", {}),
        # A new order on every call, start_date/end_date honoured: pages of 5 read it in windows.
        (ServiceStyle.unordered(time_bounds=True), "time-windows", {"FORWARDER_PAGE_LIMIT": "5"}),
    ],
    ids=["oldest-first", "time-windows"],
)
def test_a_future_record_is_shipped_once_flagged_and_hides_nothing(tmp_path, style, strategy, extra):
    with Simulator(generate_org(ORG_SEED), **style) as sim:
        future = record(sim, "9999-12-31T23:59:59Z", marker="from-the-future")
        sim.add_record(future)
        first, report = run(sim, tmp_path, **extra)
        assert first.returncode == 4, first.stderr  # completed, with a future-dated record
        assert report["totals"]["future"] == 1 and "dated in the future" in first.stderr
        assert report["streams"][0]["watermark"] < "9999"
        assert report["streams"][0]["strategy"] == strategy
        later = record(sim, format_us(now_us() + 1_000_000), marker="after-the-future")
        sim.add_record(later)
        second, report = run(sim, tmp_path, **extra)
        assert second.returncode == 0 and report["totals"]["shipped"] == 1
        ids = [e["event"]["id"] for e in shipped(tmp_path)]
        assert ids.count(canonical_id(future)) == 1 and ids.count(canonical_id(later)) == 1


def test_pages_of_future_records_cost_about_their_pages_in_time_windows(tmp_path):
    """Newest-first with start_date/end_date honoured: time windows. Records of 9999 filling pages
    are read apart from the present in one open-ended window, once a run each, and the run after
    costs about their pages (before: 28 calls, the open window halved down to a second)."""
    with Simulator(generate_org(ORG_SEED), honour_sort=False) as sim:
        future = [record(sim, f"9999-12-{n:02d}T00:00:00Z", marker=f"future-{n}") for n in range(1, 13)]
        for each in future:
            sim.add_record(each)
        first, report = run(sim, tmp_path, FORWARDER_PAGE_LIMIT="5")
        assert first.returncode == 4, first.stderr
        assert report["totals"]["future"] == 12 and report["streams"][0]["strategy"] == "time-windows"
        second, report = run(sim, tmp_path, FORWARDER_PAGE_LIMIT="5")
        assert second.returncode == 0 and report["totals"]["shipped"] == 0
        # The order learnt, the open window (full of 9999), the present, and the 3 pages of 9999.
        assert report["streams"][0]["api_calls"] <= 1 + 1 + 1 + 3
        ids = [e["event"]["id"] for e in shipped(tmp_path)]
        assert all(ids.count(canonical_id(each)) == 1 for each in future)


# --- items 5, 6, 7: records that cannot be processed, big integers ---------------------------------


def deep(levels):
    value: object = "bottom"
    for _ in range(levels):
        value = {"d": value}
    return value


@pytest.mark.parametrize(
    "hostile, rewrite, reason",
    [
        ({"created_at": None}, None, "created_at"),
        ({"created_at": "yesterday"}, None, "created_at"),
        ({"nested": deep(1000)}, None, "nested more than"),
        ({"note": "MARK-BAD-UTF8"}, (b"MARK-BAD-UTF8", b"bad \xff\xfe bytes"), "not valid Unicode"),
        ({"note": "MARK-SURROGATE"}, (b"MARK-SURROGATE", b"\\ud800"), "not valid Unicode"),
    ],
    ids=["no-created-at", "bad-created-at", "deep", "invalid-utf8", "lone-surrogate"],
)
def test_an_unplaceable_record_is_quarantined_raw_and_the_stream_moves_on(
    sim, tmp_path, hostile, rewrite, reason
):
    bad = {**record(sim, format_us(now_us() - 3_600_000_000)), **hostile}
    sim.add_record(bad)
    if rewrite:
        sim.rewrite_next(100, *rewrite)
    floor = format_us(now_us() - 13 * 31 * 86400 * 1_000_000)  # FORWARDER_INITIAL_LOOKBACK=13mo
    expected = len([r for r in sim.records_for("user", one_user(sim)) if str(r["created_at"]) >= floor]) - 1
    result, report = run(sim, tmp_path)
    assert result.returncode == 3, result.stderr  # completed, with something in quarantine
    assert report["totals"]["shipped"] == expected and report["totals"]["quarantined"] == 1
    (entry,) = quarantined(tmp_path)
    assert entry["kind"] == "record" and reason in entry["reason"]
    assert f'"user":"{one_user(sim)}"' in entry["record"] and entry["record"].isascii()  # raw, escaped
    second, report = run(sim, tmp_path)
    assert report["totals"]["shipped"] == 0 and report["ok"]  # the stream is not stuck
    # Quarantined once: the next run knows the record and skips it (before: exit 3, one more entry).
    assert second.returncode == 0 and report["totals"]["quarantined"] == 0, second.stderr
    assert report["totals"]["invalid"] == 0 and report["totals"]["skipped"] >= 1  # known: skipped
    assert len(quarantined(tmp_path)) == 1


def test_integers_over_64_bits_round_trip_exactly(sim, tmp_path):
    big = record(sim, format_us(now_us() - 60_000_000), count=123456789012345678901234567890)
    sim.add_record(big)
    result, _ = run(sim, tmp_path)
    assert result.returncode == 0, result.stderr
    (event,) = [e for e in shipped(tmp_path) if e["event"]["id"] == canonical_id(big)]
    assert "123456789012345678901234567890" in event["event"]["original"]


# --- item 3: secrets ---------------------------------------------------------------------------------

SECRET = "s3cr+t/with &odd=chars%"


def secret_forms(value):
    return [value, quote(value, safe=""), quote_plus(value)]


def test_an_echoing_token_endpoint_leaks_no_secret_form_in_report_check_or_logs(sim, tmp_path):
    sim.echo = True
    result, _ = run(sim, tmp_path, FORWARDER_CLIENT_SECRET=SECRET)
    check = cli(
        "check",
        env=env_for(
            sim.base_url,
            (tmp_path / "e.ndjson").as_uri(),
            str(tmp_path / "s"),
            FORWARDER_CLIENT_SECRET=SECRET,
        ),
    )
    assert result.returncode == 1 and check.returncode == 1
    assert "token request refused" in result.stderr and "token request refused" in check.stdout
    outputs = result.stdout + result.stderr + check.stdout + check.stderr
    assert DEMO_CLIENT_ID in outputs  # the echo reached the output...
    assert not [form for form in secret_forms(SECRET) if form in outputs]  # ...without the secret


def test_an_access_token_echoed_in_an_error_is_masked(sim, tmp_path):
    sim.echo = True
    sim.fail_next(10, status=400, path_prefix=AUDITS_PATH)
    result, report = run(sim, tmp_path)
    assert result.returncode == 1 and "Bearer" in report["streams"][0]["error"]
    outputs = result.stdout + result.stderr
    assert sim.issued_tokens and not [t for t in sim.issued_tokens if t in outputs]


# --- item 8: configuration problems exit 2 before any network call ----------------------------------


@pytest.mark.parametrize(
    "overrides, problem",
    [
        ({"FORWARDER_SINK": "hec+https://"}, "FORWARDER_SINK"),
        ({"FORWARDER_SINK": "file://remotehost/var/log/x.ndjson"}, "remotehost"),
        ({"FORWARDER_SINK": "DIRECTORY"}, "directory"),
        ({"FORWARDER_SINK": "hec+https://splunk.example.com:8088", "FORWARDER_SINK_TOKEN": ""}, "TOKEN"),
        ({"FORWARDER_STATE": "bogus://x"}, "FORWARDER_STATE: unknown scheme"),
        ({"FORWARDER_SINK": "https://collector.example.com/in?token=abc123"}, "looks like a secret"),
        ({"FORWARDER_SINK": "https://collector.example.com/in#abc123"}, "fragment"),
        ({"FORWARDER_SINK": "elasticsearch+https://u:p@es.example.com"}, "user:password@"),
        ({"FORWARDER_INITIAL_LOOKBACK": "5000y"}, "FORWARDER_INITIAL_LOOKBACK: at most"),
    ],
)
def test_configuration_problems_exit_2_before_any_network_call(sim, tmp_path, overrides, problem):
    env = env_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "state"))
    env.update({k: (tmp_path.as_uri() if v == "DIRECTORY" else v) for k, v in overrides.items()})
    result = cli("run", env=env)
    assert result.returncode == 2, result.stderr
    assert problem in result.stderr and "Traceback" not in result.stderr
    assert "abc123" not in result.stderr
    assert sim.requests == []


# --- item 4: SIGTERM ends a run stuck on a trickling server ------------------------------------------


@pytest.mark.parametrize("interval", [None, "5m"])
def test_sigterm_ends_a_run_stuck_on_a_trickle(sim, tmp_path, interval):
    sim.trickle_seconds = 1.0  # with the default 60 s timeout, only the stop can end it early
    sim.break_next(100, "trickle")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_")}
    env.update(env_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "state")))
    args = [sys.executable, "-m", "forwarder", "run"] + (["--interval", interval] if interval else [])
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not any(r.path == AUDITS_PATH for r in sim.requests):
            try:
                proc.wait(0.05)
                break
            except subprocess.TimeoutExpired:
                pass
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err  # a stop is not a failure
    assert "stream abandoned on a stop request" in err


def test_quarantine_list_and_replay_from_the_command_line(sim, tmp_path):
    bad = {**record(sim, format_us(now_us() - 60_000_000)), "created_at": 12345}
    sim.add_record(bad)
    result, _ = run(sim, tmp_path)
    assert result.returncode == 3
    env = env_for(sim.base_url, (tmp_path / "events.ndjson").as_uri(), str(tmp_path / "state"))
    listed = cli("quarantine", "list", env=env)
    assert listed.returncode == 0
    (entry,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert entry["kind"] == "record" and "created_at" in entry["reason"] and "record" not in entry
    replayed = cli("quarantine", "replay", env=env)
    assert replayed.returncode == 3 and "still cannot be placed" in replayed.stdout  # the cause remains
    assert len(quarantined(tmp_path)) == 1


@pytest.mark.parametrize("command", [("state", "show"), ("quarantine", "list")])
def test_a_bad_location_for_the_inspection_commands_is_a_configuration_error(command):
    result = cli(*command, env={"FORWARDER_STATE": "bogus://x", "FORWARDER_QUARANTINE": "s3://"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
