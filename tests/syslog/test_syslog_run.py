"""A whole forwarder run in CEF over syslog TLS into a real rsyslog: every record arrives once, one
record per frame, and parses strictly."""

from __future__ import annotations

from forwarder.app import run_once
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us, parse_iso
from tests.cef_parser import parse
from tests.e2e.helpers import expected_ids, settings_for

LOOKBACK_US = 13 * 31 * 86400 * 1_000_000


def test_cef_over_tls_run(rsyslog, tmp_path):
    org = generate_org(23)
    floor = now_us() - LOOKBACK_US
    expected = expected_ids(r for r in org.all_records() if parse_iso(r["created_at"]) >= floor)
    with Simulator(org) as sim:
        settings = settings_for(
            sim.base_url,
            rsyslog.uri("tls"),
            str(tmp_path / "state"),
            FORWARDER_FORMAT="cef",
            FORWARDER_SINK_CA_BUNDLE=rsyslog.ca_bundle,
            FORWARDER_SYSLOG_MAX_MESSAGE="65536",
        )
        report = run_once(settings)
        assert report.ok, report.to_dict()
    records = rsyslog.records("tls", len(expected))  # a fresh rsyslog per test module
    ids = [parse(r["msg"]).labelled()["eventId"] for r in records]
    assert sorted(ids) == expected
    everything = (rsyslog.dir / "tls.jsonl").read_bytes().split(b"\n")[:-1]
    assert len(everything) == len(expected), "a record arrived twice or was split"
