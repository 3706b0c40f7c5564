"""Role analytics: examples."""

from __future__ import annotations

from forwarder.normalize import roles


def test_role_analysis():
    change = roles.analyze(["AuditingRole"], ["AuditingRole", "UserAdminRole", "SuperAdmin"], True)
    assert change["admin_added"] == ["UserAdminRole"] and change["admin_granted"] and change["self_change"]
    gone = roles.analyze(["PolicyAdminRole", "AuditingRole"], [], False)
    assert gone["all_removed"] and gone["admin_removed"] == ["PolicyAdminRole"] and not gone["self_change"]
    assert not gone["admin_granted"] and not roles.analyze([], [], False)["all_removed"]
    assert (
        gone["audit_removed"]
        and not roles.analyze(["AuditingRole"], ["AuditingRole"], False)["audit_removed"]
    )
    assert roles.same_user("A@x.example", "a@X.example") and not roles.same_user("a@x.example", "b@x.example")
    assert not roles.same_user(None, None) and not roles.same_user("", "")
