"""Risk analytics: examples."""

from __future__ import annotations

import pytest

from forwarder.normalize.risk import Risk, assess


@pytest.mark.parametrize(
    ("action", "audit", "risk"),
    [
        ("user.login", {}, Risk(30, [])),
        ("user.update", {}, Risk(50, [])),
        (
            "user.update_roles",
            {"roles": {"added": ["X"], "admin_added": ["X"], "self_change": True}},
            Risk(95, ["self_admin_grant", "admin_role_granted"]),
        ),
        (
            "user.update_roles",
            {"roles": {"added": ["X"], "admin_added": [], "self_change": True}},
            Risk(70, ["self_role_change"]),
        ),
        (
            "user.update_roles",
            {"roles": {"removed": ["X"], "all_removed": True}},
            Risk(60, ["all_roles_removed"]),
        ),
        (
            "domain.update",
            {"spf": {"weakened_reasons": ["all_weakened", "all_pass"], "over_lookup_limit": True}},
            Risk(95, ["spf_all_pass", "spf_weakened", "spf_over_lookup_limit"]),
        ),
        (
            "domain.update",
            {"dkim": {"revoked": True, "weakened_reasons": ["key_revoked"]}},
            Risk(80, ["dkim_key_revoked"]),
        ),
        ("domain.update", {"dkim": {"weakened_reasons": ["testing_enabled"]}}, Risk(60, ["dkim_weakened"])),
        ("domain.destroy", {}, Risk(70, ["domain_deleted"])),
    ],
)
def test_risk(action, audit, risk):
    assert assess(action, audit) == risk


def test_risk_levels():
    assert [Risk(score, []).level for score in (0, 19, 20, 40, 69, 70, 89, 90, 100)] == [
        "info", "info", "low", "medium", "medium", "high", "high", "critical", "critical"
    ]  # fmt: skip
