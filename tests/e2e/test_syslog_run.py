"""Whole forwarder runs in CEF into a real rsyslog: over syslog TLS every record arrives once, one
record per frame, and parses strictly; over RELP a receiver killed mid-run loses nothing."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import List, Sequence, Set

from forwarder import retry
from forwarder.app import run_once
from forwarder.config import Settings
from forwarder.errors import SinkError
from forwarder.events import Event, SendResult
from forwarder.sim.generate import generate_org
from forwarder.sim.org import Org
from forwarder.sim.simulator import Simulator
from forwarder.sinks.relp import RelpSink
from forwarder.sinks.settings import SinkSettings
from forwarder.timeutil import now_us, parse_iso
from tests.cef_parser import parse
from tests.e2e.helpers import expected_ids, settings_for

LOOKBACK_US = 13 * 31 * 86400 * 1_000_000


def expected(org: Org) -> List[str]:
    """The ids a first run delivers, for a run that starts after this call."""
    floor = now_us() - LOOKBACK_US
    return expected_ids(r for r in org.all_records() if parse_iso(r["created_at"]) >= floor)


def cef_settings(sim: Simulator, uri: str, state: Path, **extra: str) -> Settings:
    return settings_for(
        sim.base_url, uri, str(state), FORWARDER_FORMAT="cef", FORWARDER_SYSLOG_MAX_MESSAGE="65536", **extra
    )


def test_cef_over_tls_run(rsyslog, tmp_path):
    org = generate_org(23)
    ids = expected(org)
    with Simulator(org) as sim:
        settings = cef_settings(
            sim, rsyslog.uri("tls"), tmp_path / "state", FORWARDER_SINK_CA_BUNDLE=rsyslog.ca_bundle
        )
        report = run_once(settings)
        assert report.ok, report.to_dict()
    records = rsyslog.records("tls", len(ids))  # a fresh rsyslog per test module
    assert sorted(parse(r["msg"]).labelled()["eventId"] for r in records) == ids
    everything = (rsyslog.dir / "tls.jsonl").read_bytes().split(b"\n")[:-1]
    assert len(everything) == len(ids), "a record arrived twice or was split"


class FailedBatches(RelpSink):
    """A RELP sink that notes the ids of every batch it failed to deliver."""

    def __init__(self, settings: SinkSettings, sleep: retry.Sleep) -> None:
        super().__init__(settings, retry.RetryPolicy(attempts=2, sleep=sleep))  # the size from its options
        self.failed: List[Set[str]] = []

    def send(self, batch: Sequence[Event]) -> SendResult:
        try:
            return super().send(batch)
        except SinkError:
            self.failed.append({event.id for event in batch})
            raise


def test_a_run_whose_receiver_is_killed_moves_no_state_past_it(relp_rsyslog, tmp_path, waits):
    """A whole CEF run over RELP; the receiver is killed mid-run: the run fails, the next run (receiver
    back) completes, every record is stored, and the only ones stored twice were in the batch in flight
    at the kill."""
    org = generate_org(23)
    ids = expected(org)
    with Simulator(org) as sim:
        settings = cef_settings(
            sim, relp_rsyslog.uri("relp"), tmp_path / "state", FORWARDER_BATCH_EVENTS="100"
        )
        sink = FailedBatches(settings.sink, waits)
        pace = retry.Pace(sleep=waits)  # the API client's waits too
        reports = []
        first = threading.Thread(target=lambda: reports.append(run_once(settings, sink=sink, pace=pace)))
        first.start()
        relp_rsyslog.records("relp", 250)
        relp_rsyslog.kill()
        first.join(timeout=120)
        assert not reports[0].ok and sink.failed
        relp_rsyslog.start()
        second = run_once(settings, pace=pace)
        assert second.ok, second.to_dict()
    got = Counter(parse(r["msg"]).labelled()["eventId"] for r in relp_rsyslog.stored("relp"))
    assert sorted(got) == ids
    assert {i for i, n in got.items() if n > 1} <= sink.failed[0] and max(got.values()) <= 2
