"""Security settings among a record's changes: recognised by name, judged by direction, and never
broken by what they hold; the risk each format carries (ECS, CEF, OCSF) follows them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forwarder.normalize import get_formatter
from forwarder.normalize.changes import safe_names
from forwarder.normalize.risk import Risk, assess
from forwarder.normalize.settings import analyze
from forwarder.records import parse_record

from . import OPTIONS, json_like


def settings_of(changes):
    return analyze(changes, safe_names(changes))


@pytest.mark.parametrize(
    "changes, reasons",
    [
        ({"two_factor_required": [True, False]}, ["mfa_disabled"]),
        ({"Require 2FA": ["required", "optional"]}, ["mfa_disabled"]),
        ({"mfa_enabled": [True, None]}, ["mfa_disabled"]),
        ({"sso_enforced": ["on", "off"]}, ["sso_disabled"]),
        ({"password_min_length": [14, 8]}, ["password_policy_weakened"]),
        ({"password_min_length": ["12", None]}, ["password_policy_weakened"]),
        ({"password_expiry_days": [90, 0]}, ["password_policy_weakened"]),
        ({"password_expiry_days": [90, 365]}, ["password_policy_weakened"]),
        ({"password_require_symbols": [True, False]}, ["password_policy_weakened"]),
        ({"session_timeout_minutes": [30, 600]}, ["session_lengthened"]),
        ({"idle_timeout": [15, None]}, ["session_lengthened"]),
        ({"max_login_attempts": [5, 50]}, ["lockout_weakened"]),
        ({"lockout_enabled": [True, False]}, ["lockout_weakened"]),
        ({"ip_allowlist": [["192.0.2.0/24"], []]}, ["ip_restriction_removed"]),
        ({"allowed_ips": ["192.0.2.0/24", "192.0.2.0/24, 0.0.0.0/0"]}, ["ip_restriction_removed"]),
        ({"ip_restriction_enabled": [True, False]}, ["ip_restriction_removed"]),
        (
            {"two_factor_required": [True, False], "password_min_length": [12, 6]},
            ["mfa_disabled", "password_policy_weakened"],
        ),
    ],
)
def test_weakenings(changes, reasons):
    found = settings_of(changes)
    assert found["weakened"] and found["weakened_reasons"] == reasons
    assert found["weakened_settings"] == sorted(safe_names(changes).values())
    assert found["mfa_disabled"] == ("mfa_disabled" in reasons)


@pytest.mark.parametrize(
    "changes",
    [
        {"two_factor_required": [False, True]},
        {"mfa_enabled": [None, True]},
        {"mfa_method": ["sms", "totp"]},  # neither on nor off: no verdict
        {"password_min_length": [8, 14]},
        {"password_expiry_days": [0, 90]},  # never expiring before
        {"password_expiry_days": [365, 90]},
        {"session_timeout_minutes": [480, 30]},
        {"max_login_attempts": [50, 5]},
        {"ip_allowlist": [["192.0.2.0/24"], ["192.0.2.0/24", "198.51.100.0/24"]]},
        {"ip_allowlist": [None, ["192.0.2.0/24"]]},
        {"sso_enforced": [False, True]},
    ],
)
def test_tightenings_and_the_undecided_are_not_weakenings(changes):
    found = settings_of(changes)
    assert found["changed"] == sorted(safe_names(changes).values())
    assert not found["weakened"] and found["weakened_reasons"] == found["weakened_settings"] == []


@pytest.mark.parametrize(
    "changes",
    [
        {"full_name": ["Ann", "Anne"], "login_count": [1, 2], "time_zone": ["UTC", "CET"]},
        {"two_factor_required": False},  # a lone value: no before
        {"dmarc_txt_record": ["v=DMARC1; p=reject", "v=DMARC1; p=none"]},
    ],
)
def test_no_analysis_without_a_security_settings_pair(changes):
    assert settings_of(changes) is None


def test_risk_of_settings():
    mfa = {"settings": {"mfa_disabled": True, "weakened_reasons": ["mfa_disabled"]}}
    other = {"settings": {"mfa_disabled": False, "weakened_reasons": ["session_lengthened"]}}
    both = {"settings": {"mfa_disabled": True, "weakened_reasons": ["mfa_disabled", "sso_disabled"]}}
    assert assess("organization.update", mfa) == Risk(80, ["mfa_disabled"])
    assert assess("organization.update", other) == Risk(60, ["security_setting_weakened"])
    assert assess("organization.update", both) == Risk(80, ["mfa_disabled", "security_setting_weakened"])
    assert assess("organization.update", {"settings": {"weakened_reasons": []}}) == Risk(50, [])


RECORD = {
    "action": "Organization Settings Updated",
    "filterable_action": "organization.update",
    "user": "alice@example.com",
    "object": "Example Corp",
    "changes": {"two_factor_required": [True, False]},
    "created_at": "2026-01-14T08:00:00.000000Z",
}


def test_every_format_carries_the_same_risk():
    """Two-factor switched off scored 50 (the default) before this analysis: now 80, high, in each."""
    record = parse_record(RECORD, "user")
    ecs = json.loads(get_formatter("ecs")(record, OPTIONS).body)
    cef = get_formatter("cef")(record, OPTIONS).body.decode()
    ocsf = json.loads(get_formatter("ocsf")(record, OPTIONS).body)
    assert ecs["emailauth"]["audit"]["risk"] == {"score": 80, "reasons": ["mfa_disabled"]}
    assert ecs["emailauth"]["audit"]["settings"]["mfa_disabled"] is True
    assert cef.split("|")[6] == "8" and "cn1=80 reason=mfa_disabled" in cef
    assert (ocsf["risk_score"], ocsf["risk_level"], ocsf["risk_details"]) == (80, "High", "mfa_disabled")


@given(st.dictionaries(st.sampled_from(["two_factor_required", "password_min_length", "ip_allowlist",
                                        "session_timeout", "max_login_attempts", "sso_enforced", "x"]),
                       json_like(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                                 | st.text(max_size=12), 3, 6)))  # fmt: skip
def test_arbitrary_values_never_break_the_analysis(changes):
    found = settings_of(changes)
    assert found is None or (
        isinstance(found["weakened"], bool) and set(found["weakened_settings"]) <= set(found["changed"])
    )
