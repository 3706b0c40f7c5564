"""`check` names the strategy a run then uses: both come from ``trail.strategy``, and this holds it
against whole runs on the simulator, the trails too short to show an order included."""

from __future__ import annotations

import functools
import io
import re

import pytest

from forwarder import app
from forwarder import check as checking
from forwarder.api.client import ApiClient, Credentials
from forwarder.reading.probe import probe
from forwarder.retry import RetryPolicy
from forwarder.sim.entities import ORG_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.sim.styles import ServiceStyle
from forwarder.streams import Stream
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, settings_for
from tests.fakes import NO_WAITS
from tests.receivers.hec import HecReceiver

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)
check = functools.partial(checking.check, pace=NO_WAITS)
UNWAITED = RetryPolicy(sleep=NO_WAITS.sleep)  # the API clients built here

DEEP = "deep.backlog@" + ORG_DOMAIN


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
        client = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET), retry=UNWAITED)
        findings = probe(client, [Stream("user", DEEP)], page_limit=5)
        assert findings is not None and findings.records == min(records, 5)
        said = findings.strategy.split(" ")[0]

        env = {"FORWARDER_USERS": DEEP, "FORWARDER_OBJECT_TYPES": "user", "FORWARDER_PAGE_LIMIT": "5"}
        report = run_once(settings_for(sim.base_url, hec.url, str(tmp_path / "state"), **env))

        assert report.ok, report.to_dict()
        assert said == report.streams[0].strategy == expected


_SAID = re.compile(
    r"ok   strategy: (?P<starts>\S+)( \(sort refused: (.* switches to (?P<then>\S+) if a full page "
    r"\((?P<page>\d+) records\)|every answer is the whole trail).*\))?"
)
REFUSES_SORT = {"strict_params": True, "honour_sort": False}  # 400 on sort; unasked, newest-first
REFUSES_BOTH = dict(REFUSES_SORT, honour_start_date=False)  # 400 on sort and start_date/end_date


@pytest.mark.parametrize(
    ("service", "page_limit", "starts", "then", "run_uses"),
    [
        # A trail shorter than a page: no full page shows the order, the run keeps what it started with.
        (REFUSES_SORT, 50, "ascending+start_date", "time-windows", "ascending+start_date"),
        (REFUSES_SORT, 10, "ascending+start_date", "time-windows", "time-windows"),
        (REFUSES_BOTH, 50, "offset", "full-scan", "offset"),
        (REFUSES_BOTH, 10, "offset", "full-scan", "full-scan"),
        (
            ServiceStyle.unordered(True, strict_params=True),
            50,
            "ascending+start_date",
            "time-windows",
            "ascending+start_date",
        ),
        (
            ServiceStyle.unordered(True, strict_params=True),
            10,
            "ascending+start_date",
            "time-windows",
            "time-windows",
        ),
        # Unpaged: every answer is the whole trail, longer than a page but never "a full page".
        (ServiceStyle.unordered(strict_params=True), 10, "offset", None, "offset"),
    ],
)
def test_check_is_true_to_the_run_when_the_service_refuses_sort(
    tmp_path, service, page_limit, starts, then, run_uses
):
    org = generate_org(3)
    org.add_deep_stream(DEEP, 30, now_us(), span_days=2)
    with Simulator(org, **service) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        env = {
            "FORWARDER_USERS": DEEP,
            "FORWARDER_OBJECT_TYPES": "user",
            "FORWARDER_PAGE_LIMIT": str(page_limit),
        }
        settings = settings_for(sim.base_url, hec.url, str(tmp_path / "state"), **env)
        out = io.StringIO()
        assert check(settings, out), out.getvalue()
        said = next(filter(None, map(_SAID.fullmatch, out.getvalue().splitlines())), None)
        assert said, out.getvalue()
        assert (said["starts"], said["then"]) == (starts, then)
        assert said["page"] in (None, str(page_limit))

        report = run_once(settings)

    assert report.ok, report.to_dict()
    assert report.streams[0].strategy == run_uses
    # What check said: the run starts so, and changes only once a full page of its own shows the order.
    full_page_read = then is not None and page_limit < 30
    assert run_uses == (then if full_page_read else starts)
