"""Services whose page size is not the one asked: no record lost, exit 0 only with every record
delivered and the state past them.

* A server-side cap (pages of 30 when 200 are asked) on a service that ignores ``sort``: before, the
  short first page was taken as the end of the trail, the watermark moved past the records on the
  pages never read, and they were lost.
* A service that ignores ``offset`` and ``sort`` and answers a request without ``limit`` with its
  default page size (200 to 300 records, at least ``FORWARDER_PAGE_LIMIT``): before, that answer was taken
  as the whole trail, and the records past it were lost.
"""

from __future__ import annotations

import functools

import pytest

from forwarder import app
from forwarder.sim.entities import ORG_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, expected_ids, settings_for
from tests.fakes import NO_WAITS
from tests.receivers.hec import HecReceiver

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)

DEEP = "deep.backlog@" + ORG_DOMAIN
ONE_STREAM = {"FORWARDER_USERS": DEEP, "FORWARDER_OBJECT_TYPES": "user"}


def delivered(hec: HecReceiver) -> list:
    return sorted(e["event"]["event"]["id"] for e in hec.events())


@pytest.mark.parametrize("start_date", [True, False], ids=["start_date", "no-start_date"])
def test_pages_capped_below_the_limit_asked_lose_nothing(tmp_path, start_date):
    org = generate_org(3)
    org.add_deep_stream(DEEP, 170, now_us(), span_days=2)
    service = Simulator(org, max_limit=30, honour_sort=False, honour_start_date=start_date)
    with service as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(sim.base_url, hec.url, str(tmp_path / "s"), **ONE_STREAM)
        report = run_once(settings)
        stream = report.streams[0]
        assert report.ok, stream.error
        assert delivered(hec) == expected_ids(sim.records_for("user", DEEP))
        again = run_once(settings).streams[0]  # the state is past every record: nothing twice
        assert again.ok and again.shipped == 0 and len(hec.events()) == 170


@pytest.mark.parametrize(("default_size", "max_limit"), [(200, 1000), (250, 1000), (300, 1000)])
def test_a_default_size_unpaged_answer_is_not_taken_as_the_whole_trail(tmp_path, default_size, max_limit):
    """The answer without a limit is the newest ``default_size`` records; a limit is honoured up to
    ``max_limit``, past the default, so the re-read asking one record more than the answer brings
    more. (Limits capped at the default page size would answer that re-read alike, whole trail or
    not: no count tells them apart, see ``TrailReader._whole``.)"""
    org = generate_org(3)
    org.add_deep_stream(DEEP, 600, now_us(), span_days=2)
    service = Simulator(
        org,
        ignore_offset=True,
        honour_sort=False,
        honour_start_date=False,
        default_limit=default_size,
        max_limit=max_limit,
    )
    with service as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(sim.base_url, hec.url, str(tmp_path / "s"), **ONE_STREAM)
        report = run_once(settings)
        stream = report.streams[0]
        # The trail past the default page cannot be read: said, and nothing shipped or committed.
        assert not report.ok and "may be a default page" in (stream.error or ""), stream.error
        assert "FORWARDER_PAGE_LIMIT" in stream.error
        assert stream.shipped == 0 and stream.watermark is None and hec.events() == []
