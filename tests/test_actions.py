"""The catalog of known actions."""

from __future__ import annotations

from forwarder.actions import KNOWN_ACTIONS, closest, is_known, selects_known
from forwarder.sim.entities import UNKNOWN_ACTIONS


def test_the_spec_actions_and_the_record_source_family_are_known():
    assert {"user.login", "user.update_roles", "domain.destroy"} <= KNOWN_ACTIONS
    assert all(is_known(a) for a in UNKNOWN_ACTIONS)  # the simulator's undocumented but routine ones
    assert not is_known("organization.update_security")


def test_prefixes_select_like_the_service():
    assert selects_known("user.update") and selects_known("domain.") and selects_known("spf_record_source")
    assert not selects_known("user.logins") and closest("user.logins") == "user.login"
    assert closest("zzzz") is None


def test_the_unknown_action_rule_knows_exactly_the_catalog():
    from pathlib import Path

    import yaml

    rule = Path(__file__).resolve().parent.parent / "detections" / "rules" / "emailauth_unknown_action.yml"
    known = yaml.safe_load(rule.read_text())["detection"]["filter_known"]["event.action"]
    assert set(known) == KNOWN_ACTIONS
