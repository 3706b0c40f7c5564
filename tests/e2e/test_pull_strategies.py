"""Whole runs over loopback against services that honour different things: API calls are counted
(the simulator logs every request), delivery is checked record by record at the HEC receiver."""

from __future__ import annotations

import functools
import math

import pytest

from forwarder import app
from forwarder.api.client import ApiClient, Credentials
from forwarder.reading.probe import probe
from forwarder.retry import RetryPolicy
from forwarder.sim.entities import ORG_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.streams import Stream
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, expected_ids, settings_for
from tests.e2e.test_run_hec import all_domains, delivered_ids, reachable
from tests.fakes import NO_WAITS
from tests.receivers.hec import HecReceiver

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)
UNWAITED = RetryPolicy(sleep=NO_WAITS.sleep)  # the API clients built here

DEEP = "deep.backlog@" + ORG_DOMAIN


def deep_org(count: int):
    org = generate_org(9)
    org.add_deep_stream(DEEP, count, now_us(), span_days=200)
    return org


def deep_settings(sim, hec, tmp_path, **extra):
    env = {"FORWARDER_USERS": DEEP, "FORWARDER_OBJECT_TYPES": "user", "FORWARDER_PAGE_LIMIT": "100"}
    return settings_for(sim.base_url, hec.url, str(tmp_path / "state"), **{**env, **extra})


def assert_each_once(hec, records):
    ids = delivered_ids(hec)
    assert len(ids) == len(set(ids)), "an event was delivered twice"
    assert sorted(ids) == expected_ids(records)


def test_an_oldest_first_backlog_costs_one_call_per_page_and_an_idle_run_one_call(tmp_path):
    org = deep_org(3000)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = deep_settings(sim, hec, tmp_path, FORWARDER_MAX_RECORDS_PER_PASS="500")
        report = run_once(settings)
        assert report.ok, report.to_dict()
        stream = report.streams[0]
        assert stream.strategy == "ascending+start_date" and stream.passes >= 6
        minimum = 3000 // 100 + 1
        assert sim.calls() == stream.api_calls <= math.ceil(1.2 * minimum)
        assert_each_once(hec, sim.records_for("user", DEEP))

        before = sim.calls()
        idle = run_once(settings)
        assert idle.ok and idle.totals()["shipped"] == 0
        assert sim.calls() - before == 1


def test_an_offset_ceiling_re_anchors_start_date_and_the_pass_goes_on(tmp_path):
    org = deep_org(2500)
    with Simulator(org, max_offset=900) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        report = run_once(deep_settings(sim, hec, tmp_path))
        assert report.ok, report.to_dict()
        assert report.streams[0].passes == 1 and not report.streams[0].truncated
        assert_each_once(hec, sim.records_for("user", DEEP))
        # Each ceiling costs one refused request and one re-read boundary page.
        assert sim.calls() <= 2500 // 100 + 1 + 2 * (2500 // 900 + 1)


def test_a_service_that_ignores_offset_re_anchors_start_date_at_each_page(tmp_path):
    """limit, sort and start_date honoured, offset not: each page asks from the last created_at
    read. Before, the pass ended after one page and the next run re-read the same one."""
    org = deep_org(2500)
    with Simulator(org, ignore_offset=True) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = deep_settings(sim, hec, tmp_path)
        report = run_once(settings)
        assert report.ok, report.to_dict()
        stream = report.streams[0]
        assert stream.strategy == "ascending+start_date" and stream.passes == 1
        assert_each_once(hec, sim.records_for("user", DEEP))
        # A page re-reads the records of the second before the last one read; one asked in vain.
        assert sim.calls() == stream.api_calls <= math.ceil(2500 / 99) + 2
        before = sim.calls()
        idle = run_once(settings)
        assert idle.ok and idle.totals()["shipped"] == 0
        assert sim.calls() - before == 1


def test_a_service_that_ignores_offset_and_start_date_fails_the_stream_with_a_message(tmp_path):
    """Pages of 100 from the start whatever the offset, 25 records unpaged: only the first page of
    a trail can ever be read, and the run says so instead of shipping it again and again."""
    org = deep_org(300)
    with (
        Simulator(org, ignore_offset=True, honour_start_date=False) as sim,
        HecReceiver(token=HEC_TOKEN) as hec,
    ):
        report = run_once(deep_settings(sim, hec, tmp_path))
        assert not report.ok
        assert "ignores offset and start_date" in report.streams[0].error
        assert "FORWARDER_PAGE_LIMIT" in report.streams[0].error
        assert delivered_ids(hec) == []
        assert sim.calls() <= 5


def org_wide_queries(sim):
    return sum(1 for r in sim.requests if r.path == "/v1/cp/audits" and "name" not in r.query)


def test_a_bare_unordered_unpaged_service_one_request_per_stream_and_pass(tmp_path):
    """The whole trail as a bare list, a new order on every call, limit/offset/sort ignored."""
    org = generate_org(5)
    with Simulator.unordered(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(
            sim.base_url,
            hec.url,
            str(tmp_path / "state"),
            FORWARDER_DOMAINS=all_domains(org),
            FORWARDER_MAX_RECORDS_PER_PASS="40",  # several passes per stream
            FORWARDER_PAGE_LIMIT="50",  # most trails are longer than a page
        )
        for run in range(3):
            before, nameless = sim.calls(), org_wide_queries(sim)
            report = run_once(settings)
            assert report.ok, report.to_dict()
            # One request a pass; two more in the run where a trail of 10 to 49 records (or 50, 100) first
            # looks like a page cut by the service: the page past it (it shows the service ignores
            # offset) and a request for one record (it shows the service ignores limit: the page was whole).
            extra = sum(s.api_calls - s.passes for s in report.streams)
            assert 0 <= extra <= 2
            # and the org-wide probe: one name-less query per object type, refused, once: in the second
            # run (the first reads every stream anyway)
            probes = org_wide_queries(sim) - nameless
            assert probes == (2 if run == 1 else 0)
            assert sim.calls() - before == sum(s.passes for s in report.streams) + extra + probes
            assert run > 0 or any(s.passes > 1 for s in report.streams)
            assert "full-scan" in {s.strategy for s in report.streams}
            org.add_activity(25, now_us())
            org.add_late_record(now_us() - 10 * 60 * 1_000_000)
        final = run_once(settings)
        assert final.ok
        assert_each_once(hec, reachable(org, now_us()))


def test_an_unordered_service_with_time_bounds_is_read_in_windows(tmp_path):
    org = deep_org(2000)
    with Simulator.unordered(org, time_bounds=True) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = deep_settings(sim, hec, tmp_path, FORWARDER_MAX_RECORDS_PER_PASS="300")
        report = run_once(settings)
        assert report.ok, report.to_dict()
        assert report.streams[0].strategy == "time-windows"
        assert_each_once(hec, sim.records_for("user", DEEP))
        # Windows sized to ~60% of a page, plus the splits while the size is learnt.
        assert sim.calls() <= 3 * (2000 // 100) + 25
        org.add_activity(40, now_us())
        assert run_once(settings).ok
        assert_each_once(hec, sim.records_for("user", DEEP))


@pytest.mark.parametrize("count", [3, 4, 5, 7])
def test_a_service_that_pages_in_a_new_order_on_every_call_loses_nothing(tmp_path, count):
    """limit/offset honoured, the order not: a page can look oldest-first by chance and the next
    repeat one of its records. That must not end the pass early (the record it skipped would be
    behind the watermark): the stream is read again in time windows, all of it in this run."""
    org = deep_org(count)
    with Simulator.unordered(org, time_bounds=True) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        extra = {"FORWARDER_PAGE_LIMIT": "2", "FORWARDER_MAX_RECORDS_PER_PASS": "2"}
        report = run_once(deep_settings(sim, hec, tmp_path, **extra))
        assert report.ok, report.to_dict()
        assert_each_once(hec, sim.records_for("user", DEEP))


def test_a_mixed_case_user_is_asked_for_as_the_users_endpoint_spells_it(tmp_path):
    org = generate_org(5)
    with Simulator(org, case_sensitive_names=True) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        mixed = [u["email"] for u in org.user_list() if u["email"] != u["email"].lower()]
        assert mixed
        report = run_once(
            settings_for(sim.base_url, hec.url, str(tmp_path / "s"), FORWARDER_OBJECT_TYPES="user")
        )
        assert report.ok, report.to_dict()
        asked = {r.query.get("name") for r in sim.requests if r.path.endswith("/audits")}
        assert set(mixed) <= asked
        ids = set(delivered_ids(hec))
        for name in mixed:
            spelled = [r for r in sim.records_for("user", name) if r["user"] == name]
            assert spelled and set(expected_ids(spelled)) <= ids
        assert {s.stream for s in report.streams} >= {f"user/{m.lower()}" for m in mixed}


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda org: Simulator(org), ("yes", "oldest-first", "yes", "yes", "ascending+start_date")),
        (
            lambda org: Simulator(org, honour_sort=False),
            ("yes", "newest-first", "yes", "yes", "time-windows"),
        ),
        (lambda org: Simulator.unordered(org), ("no (limit ignored)", "none", "no", "no", "full-scan")),
        (
            lambda org: Simulator(org, ignore_offset=True),
            ("no (offset ignored)", "oldest-first", "yes", "yes", "ascending+start_date (offset ignored"),
        ),
    ],
)
def test_check_probe_names_what_the_service_honours(make, expected):
    org = deep_org(50)
    with make(org) as sim:
        client = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET), retry=UNWAITED)
        findings = probe(client, [Stream("user", DEEP)], page_limit=5)
        assert findings is not None
        got = (findings.paging, findings.order, findings.start_date, findings.end_date)
        assert got == expected[:4]
        assert findings.strategy.startswith(expected[4])
        assert sim.calls() <= 5
