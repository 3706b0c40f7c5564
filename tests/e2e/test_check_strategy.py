"""`check` names the strategy a run then uses: both come from ``trail.strategy``, and this holds it
against whole runs on the simulator, the trails too short to show an order included."""

from __future__ import annotations

import pytest

from forwarder import retry
from forwarder.api.client import ApiClient, Credentials
from forwarder.api.probe import probe
from forwarder.app import run_once
from forwarder.sim.entities import ORG_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.streams import Stream
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, settings_for
from tests.receivers.hec import HecReceiver

DEEP = "deep.backlog@" + ORG_DOMAIN


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(retry, "sleep", lambda s: None)


@pytest.mark.parametrize(
    ("records", "service", "expected"),
    [
        (50, {}, "ascending+start_date"),
        (50, {"honour_sort": False}, "time-windows"),
        (50, {"ignore_offset": True}, "ascending+start_date"),
        # One record: no order to see, so a run asks oldest-first from start_date, and stays so.
        (1, {}, "ascending+start_date"),
        (1, {"honour_sort": False}, "ascending+start_date"),
    ],
)
def test_check_names_the_strategy_the_run_uses(tmp_path, records, service, expected):
    org = generate_org(3)
    org.add_deep_stream(DEEP, records, now_us(), span_days=2)
    with Simulator(org, **service) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        client = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET))
        findings = probe(client, [Stream("user", DEEP)])
        assert findings is not None and findings.records == min(records, 5)
        said = findings.strategy.split(" ")[0]

        env = {"FORWARDER_USERS": DEEP, "FORWARDER_OBJECT_TYPES": "user", "FORWARDER_PAGE_LIMIT": "5"}
        report = run_once(settings_for(sim.base_url, hec.url, str(tmp_path / "state"), **env))

        assert report.ok, report.to_dict()
        assert said == report.streams[0].strategy == expected
