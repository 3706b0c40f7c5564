"""The health event each run sends (forwarder/health.py, app.send_health) on the CLI runtime, over
real loopback parts: the simulator as the platform, a file or the test HEC receiver as the SIEM.
The Lambda's and the fan-out worker's are in tests/aws, the Splunk input's in tests/splunk."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import signal
import time
from pathlib import Path
from typing import List

import pytest

from forwarder import app, stop
from forwarder.errors import SinkError
from forwarder.events import Event, SendResult
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_SECRET, Simulator
from forwarder.state import open_store_for
from tests.e2e.helpers import HEC_TOKEN, cli, cli_process, env_for, quiet_users, settings_for
from tests.fakes import NO_WAITS
from tests.receivers.hec import HecReceiver

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)

HEALTH = "emailauth.forwarder.health"


@pytest.fixture(scope="module")
def org():
    return generate_org(2)


def split(path: Path):
    """(audit events, health events) of an NDJSON file sink."""
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    health = [e for e in events if e["event"].get("dataset") == HEALTH]
    return [e for e in events if e["event"].get("dataset") != HEALTH], health


def test_cli_run_ships_one_health_event_that_moves_no_state_and_counts_as_no_audit_event(org, tmp_path):
    out = tmp_path / "events.ndjson"
    with Simulator(org) as sim:
        env = env_for(sim.base_url, out.as_uri(), str(tmp_path / "state"), FORWARDER_HEALTH_EVENTS="true")
        first = cli("run", "--report", env=env)
        assert first.returncode == 0, first.stderr
        audit, health = split(out)
        report = json.loads(first.stderr.strip().splitlines()[-1])
        assert report["totals"]["shipped"] == len(audit) > 0  # the health event is no audit event
        (event,) = health
        run = event["emailauth"]["forwarder"]
        assert run["status"] == "success" and run["runtime"] == "cli" and run["tenant"] == ""
        assert run["records"]["shipped"] == len(audit) and run["api_calls"] == report["totals"]["api_calls"]
        assert run["schedule_interval_seconds"] == 300 and event["event"]["kind"] == "metric"
        state = (tmp_path / "state").read_bytes() if (tmp_path / "state").is_file() else b""
        for path in (tmp_path / "state").rglob("*"):
            state += path.read_bytes() if path.is_file() else b""
        assert event["event"]["id"].encode() not in state  # never delivered-ids, never a watermark

        second = cli("run", env=env)
        assert second.returncode == 0, second.stderr
        audit_again, health_again = split(out)
        assert audit_again == audit and len(health_again) == 2  # nothing new, a health event all the same
        assert health_again[1]["service"]["id"] == event["service"]["id"]  # the same forwarder
        assert health_again[1]["event"]["id"] != event["event"]["id"]  # another run

        off = cli("run", env={**env, "FORWARDER_HEALTH_EVENTS": "off"})
        assert off.returncode == 0 and len(split(out)[1]) == 2


def test_run_interval_sends_a_health_event_every_run_and_one_for_the_run_a_stop_ends(org, tmp_path):
    out = tmp_path / "events.ndjson"
    with Simulator(org) as sim:
        users = ",".join(quiet_users(org))
        env = env_for(
            sim.base_url,
            out.as_uri(),
            str(tmp_path / "state"),
            FORWARDER_HEALTH_EVENTS="true",
            FORWARDER_USERS=users,
        )
        process = cli_process("run", "--interval", "1s", env=env)
        try:
            deadline = time.monotonic() + 120
            while (not out.exists() or len(split(out)[1]) < 2) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    health = split(out)[1]
    assert len(health) >= 2 and {h["emailauth"]["forwarder"]["runtime"] for h in health} == {"cli"}
    assert {h["emailauth"]["forwarder"]["schedule_interval_seconds"] for h in health} == {1}
    assert len({h["service"]["id"] for h in health}) == 1


def test_a_failed_run_still_reports_its_health_without_a_secret(org, tmp_path):
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        secret = "not-" + DEMO_CLIENT_SECRET
        settings = settings_for(
            sim.base_url,
            hec.url,
            str(tmp_path / "state"),
            FORWARDER_HEALTH_EVENTS="true",
            FORWARDER_CLIENT_SECRET=secret,
        )
        report = run_once(settings)
        assert not report.ok and hec.events() == []
        (envelope,) = hec.health_events()
    assert envelope["sourcetype"] == "emailauth:audit:health"
    run = envelope["event"]["emailauth"]["forwarder"]
    assert run["status"] == "failure" and run["error"] and envelope["event"]["event"]["outcome"] == "failure"
    text = json.dumps(envelope)
    assert secret not in text and HEC_TOKEN not in text


def test_a_run_that_finds_the_lease_held_says_so(org, tmp_path):
    out = tmp_path / "events.ndjson"
    with Simulator(org) as sim:
        settings = settings_for(
            sim.base_url, out.as_uri(), str(tmp_path / "state"), FORWARDER_HEALTH_EVENTS="true"
        )
        lease = open_store_for(settings).acquire_lease("someone-else", 60)
        try:
            report = run_once(settings)
        finally:
            lease.release()
    assert report.skip_reason
    (event,) = split(out)[1]
    assert event["emailauth"]["forwarder"]["status"] == "skipped" and event["event"]["outcome"] == "unknown"
    assert "someone-else" in event["emailauth"]["forwarder"]["skipped_reason"]


class Refusing:
    """A health sink that cannot take it: the run's outcome must not change."""

    name, max_batch_events, max_batch_bytes, max_in_flight = "refusing", 10, 100_000, 1

    def __init__(self) -> None:
        self.tried: List[Event] = []

    def send(self, batch) -> SendResult:
        self.tried.extend(batch)
        raise SinkError("the health index is read-only")

    def close(self) -> None:
        pass


def quiet_settings(api_url: str, org, out: Path, tmp_path: Path):
    """A run of two quiet users into the file ``out``, health events on."""
    return settings_for(
        api_url, out.as_uri(), str(tmp_path / "state"), FORWARDER_HEALTH_EVENTS="true",
        FORWARDER_USERS=",".join(quiet_users(org)),
    )  # fmt: skip


def test_a_health_event_the_sink_refuses_is_logged_and_changes_nothing(org, tmp_path, caplog):
    out = tmp_path / "events.ndjson"
    with Simulator(org) as sim:
        settings = quiet_settings(sim.base_url, org, out, tmp_path)
        health = Refusing()
        with caplog.at_level(logging.WARNING, logger="forwarder.app"):
            report = run_once(settings, health_sink=health)
    assert report.ok and len(health.tried) == 1
    (told,) = [r for r in caplog.records if r.getMessage() == "health event not sent"]
    assert "the health index is read-only" in told.error  # type: ignore[attr-defined]
    assert split(out)[1] == []


def test_a_passed_sink_alone_gets_no_health_event(org, tmp_path):
    """A caller handing its own sink counts its events: no health event unless it asks for one."""
    from forwarder.sinks import open_sink

    out = tmp_path / "events.ndjson"
    with Simulator(org) as sim:
        settings = quiet_settings(sim.base_url, org, out, tmp_path)
        sink = open_sink(settings.sink)
        try:
            assert run_once(settings, sink=sink).ok
        finally:
            sink.close()
    assert split(out)[1] == []


def test_a_run_a_stop_ends_still_sends_its_health_marked_stopped(org, tmp_path):
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(
            sim.base_url,
            hec.url,
            str(tmp_path / "state"),
            FORWARDER_HEALTH_EVENTS="true",
            FORWARDER_CONCURRENCY="1",
        )
        hec.after_accept = lambda accepted: stop.request() if accepted == 1 else None  # SIGTERM, in effect
        try:
            report = run_once(settings)
        finally:
            stop.reset()
        assert report.ok and 0 < len(hec.events()) < len(org.all_records())
        (envelope,) = hec.health_events()
    run = envelope["event"]["emailauth"]["forwarder"]
    assert run["status"] == "stopped" and run["records"]["shipped"] == report.totals()["shipped"]
    assert run["lag"]["behind_seconds"] > 0  # what the stop left is behind


def test_sentinel_gets_the_health_row_its_table_keeps_apart_without_the_azure_secret(org, tmp_path):
    from tests.receivers.sentinel import CLIENT_SECRET, SentinelReceiver

    with Simulator(org) as sim, SentinelReceiver() as sentinel:
        env = {
            **sentinel.env(),
            "FORWARDER_HEALTH_EVENTS": "true",
            "FORWARDER_USERS": ",".join(quiet_users(org)),
        }
        report = run_once(settings_for(sim.base_url, sentinel.sink_uri, str(tmp_path / "state"), **env))
        rows = sentinel.rows()
    health = [r for r in rows if r["Ecs"]["event"].get("dataset") == HEALTH]
    assert report.ok and len(health) == 1 and len(rows) - 1 == report.totals()["shipped"]
    (row,) = health
    assert (
        row["EventId"] == row["Ecs"]["event"]["id"]
        and row["Ecs"]["emailauth"]["forwarder"]["status"] == "success"
    )
    assert CLIENT_SECRET not in json.dumps(rows)


def test_google_secops_takes_the_health_event_as_the_forwarders_not_the_platforms(org, tmp_path):
    from tests.e2e.test_run_secops import env_for as secops_env
    from tests.receivers.secops import SecOpsFake

    with Simulator(org) as sim, SecOpsFake() as fake:
        env = secops_env(
            sim, fake, tmp_path, FORWARDER_HEALTH_EVENTS="true", FORWARDER_USERS=",".join(quiet_users(org))
        )
        report = run_once(settings_for(sim.base_url, fake.url, str(tmp_path / "state"), **env))
        events = list(fake.events)
    health = [e for e in events if e["metadata"].get("product_event_type") == "forwarder.health"]
    assert report.ok and len(health) == 1 and len(events) - 1 == report.totals()["shipped"]
    assert health[0]["metadata"]["product_name"] == "emailauth-audit-forwarder"
    assert health[0]["additional"]["fields"]["emailauth.forwarder.status"] == "success"


def test_elasticsearch_gets_the_health_event_in_the_audit_data_stream(org, tmp_path):
    from tests.receivers.bulk import BulkReceiver

    stream = "logs-emailauth.audit-default"
    with Simulator(org) as sim, BulkReceiver() as es:
        settings = settings_for(
            sim.base_url, es.url, str(tmp_path / "state"), FORWARDER_HEALTH_EVENTS="true",
            FORWARDER_SINK_TOKEN=es.encoded_api_key(), FORWARDER_USERS=",".join(quiet_users(org)),
        )  # fmt: skip
        report = run_once(settings)
        (doc,) = es.health(stream)
        assert report.ok and len(es.ids(stream)) == report.totals()["shipped"]
    assert doc["event"]["kind"] == "metric" and doc["emailauth"]["forwarder"]["records"]["shipped"] == len(
        es.ids(stream)
    )


def test_a_sink_with_no_place_for_health_events_is_not_sent_one(monkeypatch, caplog, tmp_path):
    """Security Lake's custom sources hold the IAM classes only: a health event there would be
    refused, and warned about, after every run."""
    from forwarder.report import RunReport

    opened: List[str] = []
    monkeypatch.setattr(app, "open_sink", lambda settings, **kw: opened.append(settings.uri))
    lake = settings_for(
        "http://127.0.0.1:9", "securitylake://lake/ext/emailauth", str(tmp_path / "state"),
        FORWARDER_FORMAT="ocsf", FORWARDER_HEALTH_EVENTS="true",
    )  # fmt: skip
    with caplog.at_level(logging.DEBUG, logger="forwarder.app"):
        app.send_health(lake, RunReport("2026-01-01T00:00:00Z"), "state", "cli", "")
    assert opened == [] and not [r for r in caplog.records if "health" in r.getMessage()]
    hec = dataclasses.replace(lake, sink=dataclasses.replace(lake.sink, uri="hec+http://127.0.0.1:9"))
    app.send_health(hec, RunReport("2026-01-01T00:00:00Z"), "state", "cli", "")
    assert opened == ["hec+http://127.0.0.1:9"]  # (then None.send fails: logged, never raised)
