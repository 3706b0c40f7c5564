"""`audit-forwarder check` says what a name-less (org-wide) audits query gets, for every object type
pulled, and a refusal of it is no failure of the check."""

from __future__ import annotations

import io

import pytest

from forwarder import retry
from forwarder.check import check
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import settings_for


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(retry, "sleep", lambda s: None)


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
