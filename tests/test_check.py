"""`audit-forwarder check` says what a name-less (org-wide) audits query gets, for every object type
pulled, and a refusal of it is no failure of the check. The sink is reached and its token proven
without an event; a sink that fails says so on its own line and the API is still checked."""

from __future__ import annotations

import functools
import io

import pytest

from forwarder import check as checking
from forwarder.retry import Pace
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, settings_for
from tests.fakes import NO_WAITS, Waits
from tests.receivers.hec import HecReceiver

# The waits between tries are handed in and not slept: a retry tries again at once.
check = functools.partial(checking.check, pace=NO_WAITS)


@pytest.mark.parametrize(
    ("nameless", "user", "domain"),
    [
        ("org-wide", "honoured (", "honoured ("),
        ("refuse", "not honoured (refused: ", "not honoured (refused: "),
        ("one-trail", "not honoured (the answer since ", "not honoured (the answer since "),
    ],
)
def test_check_prints_what_a_nameless_query_gets(tmp_path, nameless, user, domain):
    org = generate_org(3)
    org.add_activity(40, now_us())
    domains = ",".join(d.name for d in org.domains)
    with Simulator(org, nameless=nameless) as sim:
        settings = settings_for(
            sim.base_url,
            "stdout",
            str(tmp_path / "state"),
            FORWARDER_DOMAINS=domains,
            FORWARDER_INITIAL_LOOKBACK="30d",
        )
        out = io.StringIO()
        assert check(settings, out)
    lines = out.getvalue().splitlines()
    assert f"ok   org-wide user: {user}" in "\n".join(lines)
    assert f"ok   org-wide domain: {domain}" in "\n".join(lines)
    assert lines[-2].startswith("ok   org-wide user: ") and lines[-1].startswith("ok   org-wide domain: ")


def test_check_asks_only_for_the_object_types_pulled(tmp_path):
    with Simulator(generate_org(3), nameless="org-wide") as sim:
        settings = settings_for(
            sim.base_url, "stdout", str(tmp_path / "state"), FORWARDER_OBJECT_TYPES="user"
        )
        out = io.StringIO()
        assert check(settings, out)
    assert "org-wide user: " in out.getvalue() and "org-wide domain" not in out.getvalue()
    assert sim.calls(object_type="domain") == 0


def checked(sim, hec, tmp_path, **extra):
    out = io.StringIO()
    passed = check(settings_for(sim.base_url, hec.url, str(tmp_path / "state"), **extra), out)
    return passed, out.getvalue().splitlines()


def test_the_sink_is_reached_and_its_token_proven_without_an_event(tmp_path):
    with Simulator(generate_org(2)) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        passed, lines = checked(sim, hec, tmp_path)
        assert hec.events() == []
    assert passed, lines
    sink = [line for line in lines if line.startswith("ok   sink: ")]
    assert sink == [
        f"ok   sink: Splunk HEC at 127.0.0.1:{hec.port}: healthy (HTTP 200, code 17: HEC is healthy); token "
        "accepted (an empty request got HTTP 400, code 5: No data); nothing sent"
    ]


def test_a_refused_sink_token_fails_its_line_and_the_api_is_still_checked(tmp_path):
    with Simulator(generate_org(2)) as sim, HecReceiver(token="another-token") as hec:
        passed, lines = checked(sim, hec, tmp_path)
        assert hec.events() == []
    assert not passed
    assert [line for line in lines if line.startswith("FAIL")] == [
        "FAIL sink: Splunk HEC refused the token: HTTP 403, code 4: Invalid token; "
        "check FORWARDER_SINK_TOKEN and what it is allowed to write"
    ]
    assert "ok   token: obtained" in lines


def test_the_sink_probe_and_the_api_wait_at_the_pace_check_is_handed(tmp_path):
    waits = Waits()
    with Simulator(generate_org(2)) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        sim.fail_next(1, status=503, retry_after=3)
        hec.fail_next(1, status=503, retry_after=7)
        out = io.StringIO()
        settings = settings_for(sim.base_url, hec.url, str(tmp_path / "state"))
        assert checking.check(settings, out, pace=Pace(waits)), out.getvalue()
    assert sorted(waits) == [3.0, 7.0]  # as the API and the sink asked, recorded instead of slept
