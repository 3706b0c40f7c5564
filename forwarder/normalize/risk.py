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
``mfa_disabled``                      80      two-factor authentication switched off (``settings.py``)
``self_role_change``                  70      an actor granted itself a (non-admin) role
``spf_over_lookup_limit``             70      an SPF record needs more than 10 DNS lookups
``domain_deleted``                    70      ``domain.destroy`` (or ``.delete``)
``all_roles_removed``                 60      a user was left without any role
``audit_role_removed``                60      a user lost ``AuditingRole`` (access to this trail)
``dmarc_reports_removed``             60      DMARC aggregate or failure reports lost
``dkim_weakened``                     60      DKIM test mode enabled or a shorter key
``security_setting_weakened``         60      another security setting weakened (``settings.py``)
====================================  ======  ===========================================

Levels (CEF severity is ``score // 10``): 0-19 info, 20-39 low, 40-69 medium, 70-89 high, 90-100
critical. The rule "a role whose name contains admin is high" of earlier versions is gone: only
the platform's admin-level roles (``roles.py``) count.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, NamedTuple

from . import new_tuple

WEIGHTS: Dict[str, int] = {
    "self_admin_grant": 95,
    "spf_all_pass": 95,
    "admin_role_granted": 80,
    "dmarc_weakened": 80,
    "spf_weakened": 80,
    "dkim_key_revoked": 80,
    "dkim_record_removed": 80,
    "mfa_disabled": 80,
    "self_role_change": 70,
    "spf_over_lookup_limit": 70,
    "domain_deleted": 70,
    "all_roles_removed": 60,
    "audit_role_removed": 60,
    "dmarc_reports_removed": 60,
    "dkim_weakened": 60,
    "security_setting_weakened": 60,
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


Part = Mapping[str, Any]  # one analysis of emailauth.audit: roles, dmarc, spf, dkim or settings
_ALL_PASS = frozenset({"all_pass"})
_DKIM_LOSS = frozenset({"key_revoked", "record_removed", "record_invalid"})
_RANK = {code: (-weight, code) for code, weight in WEIGHTS.items()}  # the order of the reasons


# The reasons of each analysis, spelled out: one call per analysis present, reading the fields it
# decides on, rather than a table of flags walked for every analysis (this runs on every change record).
def role_reasons(part: Part) -> List[str]:
    admin = part.get("admin_added")
    found = ["admin_role_granted"] if admin else []
    if part.get("all_removed"):
        found.append("all_roles_removed")
    if part.get("audit_removed"):
        found.append("audit_role_removed")
    if part.get("self_change"):
        if admin:
            found.append("self_admin_grant")
        elif part.get("added"):
            found.append("self_role_change")
    return found


def dmarc_reasons(part: Part) -> List[str]:
    lost = ["dmarc_reports_removed"] if part.get("visibility_reduced") else []
    return ["dmarc_weakened", *lost] if part.get("weakened") else lost


def spf_reasons(part: Part) -> List[str]:
    reasons = part.get("weakened_reasons") or ()
    found = ["spf_over_lookup_limit"] if part.get("over_lookup_limit") else []
    if "all_pass" in reasons:
        found.append("spf_all_pass")
    if not _ALL_PASS.issuperset(reasons):  # a reason besides all_pass: tested in C, no generator
        found.append("spf_weakened")
    return found


def dkim_reasons(part: Part) -> List[str]:
    found = ["dkim_key_revoked"] if part.get("revoked") else []
    if part.get("removed"):
        found.append("dkim_record_removed")
    if not _DKIM_LOSS.issuperset(part.get("weakened_reasons") or ()):  # a reason besides a loss
        found.append("dkim_weakened")
    return found


def settings_reasons(part: Part) -> List[str]:
    reasons = part.get("weakened_reasons") or ()
    found = ["mfa_disabled"] if part.get("mfa_disabled") else []
    if any(reason != "mfa_disabled" for reason in reasons):
        found.append("security_setting_weakened")
    return found


# By analysis, in the order their reasons are found.
REASONS: Dict[str, Callable[[Part], List[str]]] = {
    "roles": role_reasons,
    "settings": settings_reasons,
    "dmarc": dmarc_reasons,
    "spf": spf_reasons,
    "dkim": dkim_reasons,
}


def assess(action: str, audit: Mapping[str, Any]) -> Risk:
    """The risk of one ECS event, from its ``event.action`` and ``emailauth.audit`` fields. Facts
    get the same risk as they build the audit (``audit_of`` collects each analysis's reasons)."""
    found: List[str] = []
    for name, reasons in REASONS.items():
        part = audit.get(name)
        if part is not None:
            found += reasons(part)
    return with_reasons(action_risk(action), found)


def action_risk(action: str) -> Risk:
    """The risk of an event whose analyses find nothing: the base of its action, or a deletion."""
    base = LOGIN_BASE if action == "user.login" else DEFAULT_BASE
    if action.startswith("domain.") and action.rpartition(".")[2] in ("destroy", "delete"):
        return new_tuple(Risk, (max(base, WEIGHTS["domain_deleted"]), ["domain_deleted"]))
    return new_tuple(Risk, (base, []))


def with_reasons(risk: Risk, found: List[str]) -> Risk:
    """``risk`` with the reasons the analyses found (``found``, extended): ``risk`` itself when
    there are none."""
    if not found:
        return risk
    found += risk.reasons
    if len(found) > 1:
        found.sort(key=_RANK.__getitem__)
    return new_tuple(Risk, (max(risk.score, WEIGHTS[found[0]]), found))
