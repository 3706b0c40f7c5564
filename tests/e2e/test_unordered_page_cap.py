"""A pass the page cap cuts short ships only when the pages came oldest-first: otherwise an older
record may be on a page not read, behind the watermark the shipped ones would set."""

from __future__ import annotations

import pytest

from forwarder import retry
from forwarder.app import run_once
from forwarder.sim.entities import ORG_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, settings_for
from tests.receivers.hec import HecReceiver

DEEP = "deep.backlog@" + ORG_DOMAIN
CAPPED = {"FORWARDER_USERS": DEEP, "FORWARDER_OBJECT_TYPES": "user", "FORWARDER_PAGE_LIMIT": "5"}


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(retry, "sleep", lambda s: None)


@pytest.mark.parametrize(("honour_sort", "ships"), [(False, False), (True, True)])
def test_a_capped_pass_ships_only_oldest_first_pages(tmp_path, honour_sort, ships):
    org = generate_org(3)
    org.add_deep_stream(DEEP, 50, now_us(), span_days=2)
    service = Simulator(org, honour_sort=honour_sort, honour_start_date=False)  # newest-first or not
    with service as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(sim.base_url, hec.url, str(tmp_path / "s"), FORWARDER_MAX_PAGES="3", **CAPPED)
        stream = run_once(settings).streams[0]
        if ships:
            assert stream.ok and stream.shipped == 15
        else:
            assert "raise FORWARDER_MAX_PAGES" in stream.error and stream.shipped == 0
            assert hec.events() == []
