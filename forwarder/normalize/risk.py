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

from typing import Any, Dict, List, Mapping, NamedTuple, Tuple

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
_DKIM_LOSS = frozenset({"key_revoked", "record_removed", "record_invalid"})
_RANK = {code: (-weight, code) for code, weight in WEIGHTS.items()}  # the order of the reasons


# The reasons that hold when one field of an analysis is true, by analysis; the others (``_others``)
# read two fields or a list. Spelled out rather than as a test per reason: an event with an analysis
# builds no set or closure per test, and one without (most of them) runs none.
_FLAGS: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "roles": (("admin_role_granted", "admin_added"), ("all_roles_removed", "all_removed")),
    "dmarc": (("dmarc_weakened", "weakened"), ("dmarc_reports_removed", "visibility_reduced")),
    "spf": (("spf_over_lookup_limit", "over_lookup_limit"),),
    "dkim": (("dkim_key_revoked", "revoked"), ("dkim_record_removed", "removed")),
}
ANALYSES = frozenset(_FLAGS)  # the analyses' names in emailauth.audit


def _others(name: str, part: Part) -> List[str]:
    if name == "roles":
        if not part.get("self_change"):
            return []
        if part.get("admin_added"):
            return ["self_admin_grant"]
        return ["self_role_change"] if part.get("added") else []
    reasons = part.get("weakened_reasons") or ()
    if name == "spf":
        found = ["spf_all_pass"] if "all_pass" in reasons else []
        return [*found, "spf_weakened"] if any(reason != "all_pass" for reason in reasons) else found
    if name == "dkim":
        return ["dkim_weakened"] if any(reason not in _DKIM_LOSS for reason in reasons) else []
    return []


def assess(action: str, audit: Mapping[str, Any]) -> Risk:
    """The risk of one ECS event, from its ``event.action`` and ``emailauth.audit`` fields."""
    found = (
        ["domain_deleted"]
        if action.startswith("domain.") and action.rpartition(".")[2] in ("destroy", "delete")
        else []
    )
    if not ANALYSES.isdisjoint(audit):  # the tests of the analyses present, in any order: sorted below
        for name in ANALYSES.intersection(audit):
            part = audit[name]
            if part is not None:
                found += [code for code, field in _FLAGS[name] if part.get(field)]
                found += _others(name, part)
    base = LOGIN_BASE if action == "user.login" else DEFAULT_BASE
    if not found:
        return new_tuple(Risk, (base, []))
    if len(found) > 1:
        found.sort(key=_RANK.__getitem__)
    return new_tuple(Risk, (max(base, WEIGHTS[found[0]]), found))
