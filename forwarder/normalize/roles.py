"""Role changes that matter to an auditor: admin-level roles granted or taken, self-service, lock-out.

The platform's admin-level roles are ``OrganizationAdminRole``, ``UserAdminRole``,
``PolicyAdminRole`` and ``ThreatAdminRole`` (exact names: a role that merely contains "admin" is
not one). A *self change* is a role change whose actor is its target (compared case-insensitively,
as the service compares addresses); *all removed* means the user held roles and now holds none.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Sequence, Union

from . import new_tuple
from .changes import role_diff

ADMIN_ROLES = frozenset({"OrganizationAdminRole", "UserAdminRole", "PolicyAdminRole", "ThreatAdminRole"})
_IS_ADMIN = ADMIN_ROLES.__contains__


class RoleChange(NamedTuple):  # one per change record: built by new_tuple, without its Python __new__
    added: List[str]
    removed: List[str]
    admin_added: List[str]
    admin_removed: List[str]
    self_change: bool
    all_removed: bool

    def fields(self) -> Dict[str, Union[List[str], bool]]:
        """The ``emailauth.audit.roles`` object of an ECS event."""
        return {
            "added": self.added,
            "removed": self.removed,
            "admin_added": self.admin_added,
            "admin_removed": self.admin_removed,
            "admin_granted": bool(self.admin_added),  # a scalar for rules: list matching varies by SIEM
            "self_change": self.self_change,
            "all_removed": self.all_removed,
        }


def same_user(actor: Optional[str], target: Optional[str]) -> bool:
    """Whether a record's user (``actor``) is its object (``target``): a self change."""
    return bool(actor) and bool(target) and str(actor).casefold() == str(target).casefold()


def analyze(before: Sequence[str], after: Sequence[str], self_change: bool) -> RoleChange:
    """``self_change``: ``same_user`` of the record's user and object."""
    added, removed = role_diff(before, after)
    return new_tuple(
        RoleChange,
        (
            added,
            removed,
            # filtered in C, not in a comprehension's frame; an empty side (one of them, mostly) not at all
            [*filter(_IS_ADMIN, added)] if added else [],
            [*filter(_IS_ADMIN, removed)] if removed else [],
            self_change,
            bool(before) and not after,
        ),
    )
