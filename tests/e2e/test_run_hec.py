"""Whole runs over real loopback HTTP: the simulator as the platform, the test receiver as Splunk HEC."""

from __future__ import annotations

import functools
import io
import json
import logging

import pytest

from forwarder import app, logs
from forwarder.retry import Pace
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_SECRET, Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, canonical_id, expected_ids, settings_for
from tests.fakes import NO_WAITS, Waits
from tests.receivers.hec import HecReceiver

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)

LOOKBACK_US = 13 * 31 * 86400 * 1_000_000


@pytest.fixture
def captured_logs():
    buffer = io.StringIO()
    logs.configure("DEBUG", stream=buffer)
    yield buffer
    logging.getLogger().handlers.clear()


def reachable(org, now):
    """Every record a full run must deliver: inside the first-run window."""
    floor = now - LOOKBACK_US
    from forwarder.timeutil import parse_iso

    return [r for r in org.all_records() if parse_iso(r["created_at"]) >= floor]


def all_domains(org):
    """Every live domain, the internationalized one in its ASCII form as an admin might type it."""
    return ",".join(d.name.encode("idna").decode() for d in org.domains if d.destroyed_us is None)


def delivered_ids(hec):
    return [e["event"]["event"]["id"] for e in hec.events()]


def test_full_then_incremental_runs_deliver_each_record_once(tmp_path):
    org = generate_org(11)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(
            sim.base_url, hec.url, str(tmp_path / "state"), FORWARDER_DOMAINS=all_domains(org)
        )
        first = run_once(settings)
        assert first.ok, first.to_dict()
        assert sorted(delivered_ids(hec)) == expected_ids(reachable(org, now_us()))

        second = run_once(settings)
        assert second.ok and second.totals()["shipped"] == 0

        added = org.add_activity(30, now_us())
        added.append(org.add_late_record(now_us() - 20 * 60 * 1_000_000))
        third = run_once(settings)
        assert third.ok
        ids = delivered_ids(hec)
        assert len(ids) == len(set(ids)), "an event was delivered twice"
        assert set(expected_ids(added)) <= set(ids)
        assert third.totals()["shipped"] == len(added)


def test_event_ids_are_sha256_of_the_canonical_raw_record(tmp_path):
    org = generate_org(3)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        assert run_once(settings_for(sim.base_url, hec.url, str(tmp_path / "s"))).ok
        for envelope in hec.events():
            ecs = envelope["event"]
            assert ecs["event"]["id"] == canonical_id(json.loads(ecs["event"]["original"]))
            assert envelope["sourcetype"] == "emailauth:audit"


@pytest.mark.parametrize("created_ms", [False, True])
def test_bare_strict_service_with_revoked_tokens_and_busy_answers(tmp_path, created_ms):
    """A service that rejects start_date/sort, does not page, answers 429/503, and revokes tokens
    mid-run still yields every record once."""
    org = generate_org(5)
    sim = Simulator(
        org,
        style="bare",
        paging=False,
        strict_params=True,
        honour_start_date=False,
        honour_sort=False,
        token_created_ms=created_ms,
    )
    with sim, HecReceiver(token=HEC_TOKEN) as hec:
        sim.fail_next(2, status=429, retry_after=0.25)
        sim.fail_next(2, status=503)
        sim.revoke_tokens_at(3, 7)  # mid-run, at fixed points: batches are shared and sent apart
        settings = settings_for(
            sim.base_url,
            hec.url,
            str(tmp_path / "state"),
            FORWARDER_CONCURRENCY="1",
            FORWARDER_DOMAINS=all_domains(org),
        )
        waits = Waits()
        report = app.run_once(settings, pace=Pace(sleep=waits))
        assert report.ok, report.to_dict()
        ids = delivered_ids(hec)
        assert len(ids) == len(set(ids))
        assert sorted(ids) == expected_ids(reachable(org, now_us()))
        assert any(abs(w - 0.25) < 0.05 for w in waits)  # Retry-After was honoured
        assert len(sim.issued_tokens) >= 3  # revoked twice, refreshed each time
        again = run_once(settings)
        assert again.ok and again.totals()["shipped"] == 0


def test_one_failing_stream_does_not_stop_the_others(tmp_path):
    org = generate_org(5)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        sim.malform_next(1, kind="html")
        report = run_once(settings_for(sim.base_url, hec.url, str(tmp_path / "s"), FORWARDER_CONCURRENCY="1"))
        failed = [s for s in report.streams if s.error]
        assert len(failed) == 1 and "not JSON" in failed[0].error
        assert not report.ok
        assert all(s.shipped > 0 or s.new == 0 for s in report.streams if s.ok)
        # The failed stream's state did not move: the next run delivers it, nothing twice.
        assert run_once(settings_for(sim.base_url, hec.url, str(tmp_path / "s"))).ok
        ids = delivered_ids(hec)
        assert sorted(ids) == expected_ids(reachable(org, now_us()))


def test_no_secret_reaches_logs_reports_or_events(tmp_path, captured_logs):
    org = generate_org(5)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(sim.base_url, hec.url, str(tmp_path / "s"))
        sim.fail_next(1, status=503)
        hec.after_accept = lambda n: sim.revoke_tokens() if n == 1 else None
        report = run_once(settings)
        bad_hec = settings_for(
            sim.base_url, hec.url, str(tmp_path / "s2"), FORWARDER_SINK_TOKEN="wrong-" + HEC_TOKEN
        )
        failed = run_once(bad_hec)
        assert not failed.ok
        texts = [
            captured_logs.getvalue(),
            json.dumps(report.to_dict()),
            json.dumps(failed.to_dict()),
            repr(settings),
            json.dumps(hec.events()),
        ]
        secrets = [DEMO_CLIENT_SECRET, HEC_TOKEN, *sim.issued_tokens]
        assert len(sim.issued_tokens) >= 2
        for text in texts:
            for secret in secrets:
                assert secret not in text
        assert "Invalid token" in json.dumps(failed.to_dict())


def test_discovered_domains_become_domain_streams(tmp_path):
    org = generate_org(11)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(sim.base_url, hec.url, str(tmp_path / "s"), FORWARDER_DISCOVER_DOMAINS="true")
        report = run_once(settings)
        assert report.ok, report.to_dict()
        domain_streams = sorted(s.stream for s in report.streams if s.stream.startswith("domain/"))
        live = sorted(f"domain/{d.name}" for d in org.domains if d.destroyed_us is None)
        assert domain_streams == live  # the IDN one listed in ASCII, pulled by its Unicode name
        ids = delivered_ids(hec)
        assert sorted(ids) == expected_ids(reachable(org, now_us()))


def test_discovery_against_a_service_without_the_endpoint_says_so(tmp_path):
    with Simulator(generate_org(11), domains_endpoint=False) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(sim.base_url, hec.url, str(tmp_path / "s"), FORWARDER_DISCOVER_DOMAINS="true")
        report = run_once(settings)
        assert not report.ok and "FORWARDER_DISCOVER_DOMAINS" in report.error and "404" in report.error
        assert hec.events() == []
