"""End to end: the forwarder against the API simulator and the ``_bulk`` receiver, crashing between
a batch's send and its state commit. The re-run sends the batches that were in flight again and
Elasticsearch's ``create`` with ``_id`` = event id keeps every event indexed exactly once."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest

from forwarder.app import run_once
from forwarder.config import load_settings
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.state import open_store
from forwarder.state.model import StreamState
from tests.receivers.bulk import BulkReceiver

STREAM = "logs-emailauth.audit-default"
BATCH = 20
IN_FLIGHT = 4  # ElasticsearchSink.max_in_flight


class Crash(BaseException):
    """The process dies: nothing in the forwarder may catch this."""


class CrashingStore:
    """A real local store whose ``crash_on``-th commit dies before writing anything."""

    def __init__(self, inner: Any, crash_on: Optional[int]) -> None:
        self.inner = inner
        self.crash_on = crash_on
        self.commits = 0

    def commit(self, key: str, state: StreamState, version: Optional[str]) -> str:
        self.commits += 1
        if self.commits == self.crash_on:
            raise Crash(f"killed before commit {self.commits}")
        return self.inner.commit(key, state, version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def simulator():
    org = generate_org(11)
    with Simulator(org) as sim:
        # Three busy users: a few hundred records, many batches.
        counts: dict[str, int] = {}
        for record in org.all_records():
            counts[record["user"]] = counts.get(record["user"], 0) + 1
        sim.users_for_test = sorted(counts, key=counts.__getitem__)[-3:]  # type: ignore[attr-defined]
        yield sim


def settings_for(sim: Simulator, es: BulkReceiver, tmp: Any) -> Any:
    return load_settings(
        {
            "FORWARDER_API_URL": sim.base_url,
            "FORWARDER_CLIENT_ID": DEMO_CLIENT_ID,
            "FORWARDER_CLIENT_SECRET": DEMO_CLIENT_SECRET,
            "FORWARDER_OBJECT_TYPES": "user",
            "FORWARDER_USERS": ",".join(sim.users_for_test),  # type: ignore[attr-defined]
            "FORWARDER_SINK": es.url,
            "FORWARDER_SINK_TOKEN": es.encoded_api_key(),
            "FORWARDER_BATCH_EVENTS": str(BATCH),
            "FORWARDER_CONCURRENCY": "1",
            "FORWARDER_INITIAL_LOOKBACK": "400d",
            "FORWARDER_STATE": str(tmp / "state"),
            "FORWARDER_QUARANTINE": str(tmp / "quarantine"),
            "FORWARDER_HEALTH_EVENTS": "false",  # the requests counted here carry audit events alone
        }
    )


@pytest.mark.parametrize("crash_on", [1, 4])
def test_a_crash_between_send_and_commit_leaves_every_event_indexed_once(simulator, tmp_path, crash_on):
    with BulkReceiver() as control:
        baseline = run_once(settings_for(simulator, control, tmp_path / "control"))
        expected = sorted(control.ids(STREAM))
    assert baseline.ok and len(expected) > 4 * BATCH

    with BulkReceiver() as es:
        settings = settings_for(simulator, es, tmp_path / "crashing")
        store = CrashingStore(open_store(settings.state), crash_on)
        with pytest.raises(Crash):
            run_once(settings, store=store)
        sent_before_crash = len(es.ids(STREAM))

        report = run_once(settings)

        assert report.ok, report.streams
        assert sorted(es.ids(STREAM)) == expected  # every event, each once
        resent = es.statuses.count(409)
        # At most the batches in flight: the delivered-ids index, written once a batch is accepted and
        # before the state commit that died, usually spares even those
        assert resent <= IN_FLIGHT * BATCH
        assert sent_before_crash >= crash_on * BATCH
        assert es.statuses.count(201) == len(expected)
        assert report.totals()["shipped"] == len(expected) - (sent_before_crash - resent)


def test_mapping_errors_are_quarantined_counted_and_passed(simulator, tmp_path):
    with BulkReceiver() as es:
        es.mappings[STREAM] = {"user.target.roles": "long"}  # an index template that disagrees with us
        settings = settings_for(simulator, es, tmp_path)

        first = run_once(settings)
        again = run_once(settings)

        quarantined = [
            json.loads(line)
            for line in (tmp_path / "quarantine" / "quarantine.ndjson").read_text().splitlines()
        ]
        assert first.ok and first.totals()["quarantined"] == len(quarantined) > 0
        assert all("user.target.roles" in entry["reason"] for entry in quarantined)
        assert first.totals()["shipped"] == len(es.ids(STREAM))
        assert again.ok and again.totals()["new"] == 0  # the watermark moved past them
