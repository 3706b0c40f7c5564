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

from typing import Any, Dict, List, Mapping, NamedTuple

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
        return next(name for floor, name in LEVELS if self.score >= floor)


def _reasons(action: str, audit: Mapping[str, Any]) -> List[str]:
    found: List[str] = []
    roles = audit.get("roles", {})
    if roles.get("admin_added"):
        found.append("admin_role_granted")
        if roles.get("self_change"):
            found.append("self_admin_grant")
    elif roles.get("self_change") and roles.get("added"):
        found.append("self_role_change")
    if roles.get("all_removed"):
        found.append("all_roles_removed")
    dmarc = audit.get("dmarc", {})
    if dmarc.get("weakened"):
        found.append("dmarc_weakened")
    if dmarc.get("visibility_reduced"):
        found.append("dmarc_reports_removed")
    spf = audit.get("spf", {})
    if "all_pass" in spf.get("weakened_reasons", []):
        found.append("spf_all_pass")
    if set(spf.get("weakened_reasons", [])) - {"all_pass"}:
        found.append("spf_weakened")
    if spf.get("over_lookup_limit"):
        found.append("spf_over_lookup_limit")
    dkim = audit.get("dkim", {})
    if dkim.get("revoked"):
        found.append("dkim_key_revoked")
    if dkim.get("removed"):
        found.append("dkim_record_removed")
    if set(dkim.get("weakened_reasons", [])) - {"key_revoked", "record_removed", "record_invalid"}:
        found.append("dkim_weakened")
    if action.startswith("domain.") and action.rpartition(".")[2] in ("destroy", "delete"):
        found.append("domain_deleted")
    return found


def assess(action: str, audit: Mapping[str, Any]) -> Risk:
    """The risk of one ECS event, from its ``event.action`` and ``emailauth.audit`` fields."""
    reasons = sorted(_reasons(action, audit), key=lambda code: (-WEIGHTS[code], code))
    base = LOGIN_BASE if action == "user.login" else DEFAULT_BASE
    return Risk(max([base] + [WEIGHTS[code] for code in reasons]), reasons)
