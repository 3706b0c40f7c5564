"""The catalog of known audit actions (`filterable_action` values): the spec's six, `user.create`
(routine in real trails, though the spec does not list it), and the `<record>_record_source.<verb>`
family the product's activity search shows for DMARC, SPF, DKIM and BIMI record sources. A service
may send others; the catalog only says which are expected, so a filter that selects none of them (a
typo such as `user.logins`) can be told, and the unknown-action rule stays quiet on routine ones."""

from __future__ import annotations

from typing import FrozenSet, Optional

SPEC_ACTIONS = (
    "user.create",
    "user.update",
    "user.update_roles",
    "user.login",
    "domain.create",
    "domain.update",
    "domain.destroy",
)
RECORD_SOURCES = ("dmarc", "spf", "dkim", "bimi")
_VERBS = ("create", "update", "destroy")
KNOWN_ACTIONS: FrozenSet[str] = frozenset(
    SPEC_ACTIONS + tuple(f"{record}_record_source.{verb}" for record in RECORD_SOURCES for verb in _VERBS)
)


def is_known(action: str) -> bool:
    return action in KNOWN_ACTIONS


def selects_known(prefix: str) -> bool:
    """Whether a `filter` prefix selects at least one known action (the service treats it as a
    prefix: `user.update` also returns `user.update_roles`)."""
    return any(action.startswith(prefix) for action in KNOWN_ACTIONS)


def closest(prefix: str) -> Optional[str]:
    """The known action nearest to a prefix that selects none, for a did-you-mean."""
    import difflib

    found = difflib.get_close_matches(prefix, sorted(KNOWN_ACTIONS), n=1, cutoff=0.6)
    return found[0] if found else None
