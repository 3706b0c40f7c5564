"""One risk summary per event: a 0-100 score and the reasons behind it, shared by every format.

The score is the highest weight among the event's reasons, or the base of its kind when it has none
(a login 30, anything else 50). Weights, by reason code:

====================================  ======  ===========================================
reason                                weight  when
====================================  ======  ===========================================
``self_admin_grant``                  95      an actor granted an admin-level role to itself
``spf_all_pass``                      95      an SPF record now ends in ``+all``
``admin_role_granted``                80      an admin-level role was granted
``dmarc_weakened``                    80      see ``dmarc.py``
``spf_weakened``                      80      see ``spf.py`` (other than ``+all``)
``dkim_key_revoked``                  80      a DKIM key now has an empty ``p=``
``dkim_record_removed``               80      a DKIM key record is gone or invalid
``self_role_change``                  70      an actor granted itself a (non-admin) role
``spf_over_lookup_limit``             70      an SPF record needs more than 10 DNS lookups
``domain_deleted``                    70      ``domain.destroy`` (or ``.delete``)
``all_roles_removed``                 60      a user was left without any role
``dmarc_reports_removed``             60      DMARC aggregate or failure reports lost
``dkim_weakened``                     60      DKIM test mode enabled or a shorter key
====================================  ======  ===========================================

Levels (CEF severity is ``score // 10``): 0-19 info, 20-39 low, 40-69 medium, 70-89 high, 90-100
critical. The rule "a role whose name contains admin is high" of earlier versions is gone: only
the platform's admin-level roles (``roles.py``) count.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Set, Tuple

from . import new_tuple

WEIGHTS: Dict[str, int] = {
    "self_admin_grant": 95,
    "spf_all_pass": 95,
    "admin_role_granted": 80,
    "dmarc_weakened": 80,
    "spf_weakened": 80,
    "dkim_key_revoked": 80,
    "dkim_record_removed": 80,
    "self_role_change": 70,
    "spf_over_lookup_limit": 70,
    "domain_deleted": 70,
    "all_roles_removed": 60,
    "dmarc_reports_removed": 60,
    "dkim_weakened": 60,
}
LOGIN_BASE, DEFAULT_BASE = 30, 50
LEVELS = ((90, "critical"), (70, "high"), (40, "medium"), (20, "low"), (0, "info"))


class Risk(NamedTuple):
    score: int
    reasons: List[str]

    @property
    def level(self) -> str:
        score = self.score
        if 0 <= score <= 100:
            return _LEVEL_OF_SCORE[score]
        return next(name for floor, name in LEVELS if score >= floor)


_LEVEL_OF_SCORE = tuple(next(name for floor, name in LEVELS if score >= floor) for score in range(101))


Part = Mapping[str, Any]  # one analysis of emailauth.audit: roles, dmarc, spf or dkim
_DKIM_LOSS = {"key_revoked", "record_removed", "record_invalid"}


def _weakened_reasons(part: Part) -> Set[str]:
    return set(part.get("weakened_reasons") or ())


# (reason, the emailauth.audit part it reads, test on that part), in WEIGHTS order. Grouped by part
# so that an event without an analysis (most of them) runs no test.
_TESTS: Tuple[Tuple[str, str, Callable[[Part], bool]], ...] = (
    ("self_admin_grant", "roles", lambda r: bool(r.get("admin_added") and r.get("self_change"))),
    ("spf_all_pass", "spf", lambda s: "all_pass" in _weakened_reasons(s)),
    ("admin_role_granted", "roles", lambda r: bool(r.get("admin_added"))),
    ("dmarc_weakened", "dmarc", lambda d: bool(d.get("weakened"))),
    ("spf_weakened", "spf", lambda s: bool(_weakened_reasons(s) - {"all_pass"})),
    ("dkim_key_revoked", "dkim", lambda d: bool(d.get("revoked"))),
    ("dkim_record_removed", "dkim", lambda d: bool(d.get("removed"))),
    ("self_role_change", "roles", lambda r: bool(
        r.get("self_change") and r.get("added") and not r.get("admin_added")
    )),
    ("spf_over_lookup_limit", "spf", lambda s: bool(s.get("over_lookup_limit"))),
    ("all_roles_removed", "roles", lambda r: bool(r.get("all_removed"))),
    ("dmarc_reports_removed", "dmarc", lambda d: bool(d.get("visibility_reduced"))),
    ("dkim_weakened", "dkim", lambda d: bool(_weakened_reasons(d) - _DKIM_LOSS)),
)  # fmt: skip
_PARTS = frozenset(part for _, part, _ in _TESTS)
# part -> its (reason, test) pairs, in WEIGHTS order: an event runs only the tests of its parts.
_BY_PART: Dict[str, Tuple[Tuple[str, Callable[[Part], bool]], ...]] = {
    name: tuple((code, test) for code, part, test in _TESTS if part == name) for name in sorted(_PARTS)
}


def _deleted(action: str) -> bool:
    return action.startswith("domain.") and action.rpartition(".")[2] in ("destroy", "delete")


def assess(action: str, audit: Mapping[str, Any]) -> Risk:
    """The risk of one ECS event, from its ``event.action`` and ``emailauth.audit`` fields."""
    found = ["domain_deleted"] if _deleted(action) else []
    if not _PARTS.isdisjoint(audit):
        for part, tests in _BY_PART.items():
            fields = audit.get(part)
            if fields is not None:
                found += [code for code, test in tests if test(fields)]
    base = LOGIN_BASE if action == "user.login" else DEFAULT_BASE
    if not found:
        return new_tuple(Risk, (base, []))
    reasons = sorted(found, key=lambda code: (-WEIGHTS[code], code))
    return new_tuple(Risk, (max([base] + [WEIGHTS[code] for code in reasons]), reasons))
