"""Role changes that matter to an auditor: admin-level roles granted or taken, self-service, lock-out.

The platform's admin-level roles are ``OrganizationAdminRole``, ``UserAdminRole``,
``PolicyAdminRole`` and ``ThreatAdminRole`` (exact names: a role that merely contains "admin" is
not one). A *self change* is a role change whose actor is its target (compared case-insensitively,
as the service compares addresses); *all removed* means the user held roles and now holds none;
*audit removed* that the user lost ``AuditingRole``, the read access reviewers of this trail rely on.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

from .changes import role_diff

AUDIT_ROLE = "AuditingRole"  # read access to the audit trail: losing it blinds the reviewers
ADMIN_ROLES = frozenset({"OrganizationAdminRole", "UserAdminRole", "PolicyAdminRole", "ThreatAdminRole"})
_IS_ADMIN = ADMIN_ROLES.__contains__
RoleFields = Dict[str, Union[List[str], bool]]


def same_user(actor: Optional[str], target: Optional[str]) -> bool:
    """Whether a record's user (``actor``) is its object (``target``): a self change."""
    return bool(actor) and bool(target) and str(actor).casefold() == str(target).casefold()


def analyze(before: Sequence[str], after: Sequence[str], self_change: bool) -> RoleFields:
    """The ``emailauth.audit.roles`` object of a change from roles ``before`` to ``after``.
    ``self_change``: ``same_user`` of the record's user and object."""
    added, removed = role_diff(before, after)
    # filtered in C, not in a comprehension's frame; an empty side (one of them, mostly) not at all
    admin_added = [*filter(_IS_ADMIN, added)] if added else []
    return {
        "added": added,
        "removed": removed,
        "admin_added": admin_added,
        "admin_removed": [*filter(_IS_ADMIN, removed)] if removed else [],
        "admin_granted": bool(admin_added),  # a scalar for rules: list matching varies by SIEM
        "self_change": self_change,
        "all_removed": bool(before) and not after,
        "audit_removed": AUDIT_ROLE in removed,
    }
