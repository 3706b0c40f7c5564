"""A pass the page cap cuts short ships only when the pages came oldest-first: otherwise an older
record may be on a page not read, behind the watermark the shipped ones would set."""

from __future__ import annotations

import functools

import pytest

from forwarder import app
from forwarder.sim.entities import ORG_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, settings_for
from tests.fakes import NO_WAITS
from tests.receivers.hec import HecReceiver

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)

DEEP = "deep.backlog@" + ORG_DOMAIN
CAPPED = {"FORWARDER_USERS": DEEP, "FORWARDER_OBJECT_TYPES": "user", "FORWARDER_PAGE_LIMIT": "5"}


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
