"""The organization's state while its audit trail is written, oldest first.

``History`` holds the mutable state (roles, profiles, DMARC/SPF/DKIM records) and turns each change
into one audit record, so that every ``[before, after]`` pair agrees with the record before it and
with the users endpoint. Pure: randomness comes from the ``rng`` given, time from each ``ts``.
"""

from __future__ import annotations

import random
import string
from typing import Dict, List, Optional, Tuple

from ..timeutil import format_us, from_us
from .entities import (
    ADMIN_ROLES,
    DOMAIN_ADMINS,
    LAST_NAMES,
    ORG_DOMAIN,
    OWNER,
    PLAIN_ROLES,
    ROLES,
    TIME_ZONES,
    USER_ADMIN,
    Record,
    SimDomain,
    SimUser,
    dmarc_text,
)

_SPF_INCLUDES = ("_spf.google.com", "spf.protection.outlook.com", "sendgrid.net", "mailgun.org",
                 "_spf.salesforce.com", "servers.mcsv.net")  # fmt: skip
_POLICIES = ("none", "quarantine", "reject")


def audit_record(action: str, filterable: str, actor: str, obj: str, changes: Record, ts: int) -> Record:
    return {
        "action": action,
        "filterable_action": filterable,
        "user": actor,
        "object": obj,
        "changes": changes,
        "created_at": format_us(ts),
    }


def dkim_key(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "+/"
    return "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "".join(rng.choice(alphabet) for _ in range(48))


class History:
    """The organization's state while its trail is written, oldest first. Each method returns one record."""

    def __init__(self, rng: random.Random, users: List[SimUser], domains: List[SimDomain]) -> None:
        self.rng = rng
        self.users = users
        self.domains = domains

    def pick_target(self) -> SimUser:
        """A user whose roles may change: everyone but the owner and the fixed admins."""
        return self.rng.choice(self.users[4:])

    def login(self, ts: int, user: SimUser) -> Record:
        return audit_record("user.login", "user.login", user.email, user.email, {}, ts)

    def profile_update(
        self, ts: int, target: SimUser, keys: Tuple[str, ...] = (), actor: Optional[SimUser] = None
    ) -> Record:
        keys = keys or tuple(self.rng.sample(("full_name", "phone", "time_zone"), self.rng.choice((1, 1, 2))))
        if actor is None:
            actor = target if self.rng.random() < 0.7 else self.users[USER_ADMIN]
        changes: Record = {}
        for key in keys:
            before = getattr(target, key)
            after = self._new_profile_value(target, key)
            setattr(target, key, after)
            changes[key] = [before, after]
        return audit_record("user.update", "user.update", actor.email, target.email, changes, ts)

    def _new_profile_value(self, user: SimUser, key: str) -> Optional[str]:
        rng = self.rng
        if key == "email":  # someone re-typed the address with capitals; the service keeps it as typed
            local, _, domain = user.email.partition("@")
            return ".".join(p.capitalize() for p in local.split(".")) + "@" + domain
        if key == "full_name":
            first = user.full_name.split(" ")[0]
            return first + " " + rng.choice([n for n in LAST_NAMES if n not in user.full_name])
        if key == "phone":
            return f"+1 555 01{rng.randrange(100):02d}"
        return rng.choice([z for z in TIME_ZONES if z != user.time_zone])

    def role_change(
        self, ts: int, target: SimUser, grant: str = "", revoke: str = "", actor: Optional[SimUser] = None
    ) -> Record:
        before = list(target.roles)
        if not grant and not revoke:
            held_admin = [r for r in before if r in ADMIN_ROLES]
            roll = self.rng.random()
            if held_admin and roll < 0.5:  # admin rights are taken back more often than granted
                revoke = self.rng.choice(held_admin)
            elif len(before) > 1 and roll < 0.4:
                revoke = self.rng.choice(before)
            else:
                pool = ADMIN_ROLES if roll > 0.85 else PLAIN_ROLES
                grant = self.rng.choice([r for r in pool if r not in before] or list(ROLES))
        target.roles = [r for r in before if r != revoke] + ([grant] if grant and grant not in before else [])
        actor = actor or self.users[self.rng.choice((OWNER, USER_ADMIN))]
        changes = {"roles": [before, list(target.roles)]}
        return audit_record("user.update_roles", "user.update_roles", actor.email, target.email, changes, ts)

    def _domain_record(
        self,
        ts: int,
        dom: SimDomain,
        phrase: str,
        action: str,
        changes: Record,
        actor: Optional[SimUser] = None,
    ) -> Record:
        actor = actor or self.users[self.rng.choice(DOMAIN_ADMINS)]
        return audit_record(phrase, action, actor.email, dom.name, changes, ts)

    def create(self, ts: int, dom: SimDomain) -> Record:
        changes = {"name": [None, dom.name], "dmarc_txt_record": [None, dmarc_text(dom.dmarc)]}
        dom.dmarc_updated_us = ts
        return self._domain_record(ts, dom, "Domain Created", "domain.create", changes)

    def destroy(self, ts: int, dom: SimDomain) -> Record:
        return self._domain_record(ts, dom, "Domain Deleted", "domain.destroy", {"name": [dom.name, None]})

    def dmarc_update(self, ts: int, dom: SimDomain, how: str = "", actor: Optional[SimUser] = None) -> Record:
        before = dmarc_text(dom.dmarc)
        _mutate_dmarc(self.rng, dom.dmarc, how)
        changes = {
            "dmarc_txt_record": [before, dmarc_text(dom.dmarc)],
            "dmarc_updated_at": [format_us(dom.dmarc_updated_us), format_us(ts)],
        }
        dom.dmarc_updated_us = ts
        return self._domain_record(ts, dom, "DMARC Record Updated", "domain.update", changes, actor)

    def spf_update(self, ts: int, dom: SimDomain) -> Record:
        rng = self.rng
        before = dom.spf_text()
        spare = [i for i in _SPF_INCLUDES if i not in dom.spf_includes]
        roll = rng.random()
        if roll < 0.45 and spare:
            dom.spf_includes.append(rng.choice(spare))
        elif roll < 0.7 and len(dom.spf_includes) > 1:
            dom.spf_includes.remove(rng.choice(dom.spf_includes))
        else:  # "?all" now and then: a weakening worth an alert
            dom.spf_all = rng.choice([q for q in ("-all", "~all", "?all") if q != dom.spf_all])
        changes = {"spf_txt_record": [before, dom.spf_text()]}
        return self._domain_record(ts, dom, "SPF Record Updated", "domain.update", changes)

    def dkim_update(self, ts: int, dom: SimDomain) -> Record:
        before_selector, before_text = dom.dkim_selector, dom.dkim_text()
        if self.rng.random() < 0.2:  # the old key is revoked in place: an empty p= tag
            dom.dkim_key = ""
            changes: Record = {}
        else:
            dom.dkim_selector = f"s{from_us(ts).year}{self.rng.choice(string.ascii_lowercase)}"
            dom.dkim_key = dkim_key(self.rng)
            changes = {"dkim_selector": [before_selector, dom.dkim_selector]}
        changes["dkim_txt_record"] = [before_text, dom.dkim_text()]
        return self._domain_record(ts, dom, "DKIM Record Updated", "domain.update", changes)

    def source_action(self, ts: int, dom: SimDomain, action: str) -> Record:
        """Actions outside the documented list, as the product's UI shows them."""
        changes: Record
        if action == "dkim_record_source.update":
            before = dom.dkim_source
            dom.dkim_source = "hosted" if before != "hosted" else "customer_dns"
            changes = {"source": [before, dom.dkim_source]}
            return self._domain_record(ts, dom, "DKIM Record Source Updated", action, changes)
        ascii_name = dom.name.encode("idna").decode("ascii")
        bimi = f"v=BIMI1; l=https://{ascii_name}/brand/logo.svg"
        changes = {"bimi_txt_record": [None, bimi]}
        return self._domain_record(ts, dom, "BIMI Record Source Created", action, changes)


def _mutate_dmarc(rng: random.Random, tags: Dict[str, str], how: str) -> None:
    """Change one thing in a DMARC record, tightening or weakening it. ``how`` forces a change."""
    before = dict(tags)
    how = how or rng.choice(("p_up", "p_up", "p_down", "pct", "sp", "adkim", "ruf", "fo"))
    level = _POLICIES.index(tags["p"])
    if how == "p_up":
        tags["p"] = _POLICIES[min(level + 1, 2)]
    elif how in ("p_down", "p_none"):
        tags["p"] = "none" if how == "p_none" else _POLICIES[max(level - 1, 0)]
    elif how == "p_reject":
        tags["p"] = "reject"
    elif how == "sp":
        if tags.pop("sp", None) is None:
            tags["sp"] = rng.choice(_POLICIES)
    elif how == "adkim":
        tags["adkim"] = "r" if tags.get("adkim") == "s" else "s"
    elif how == "ruf":
        if tags.pop("ruf", None) is None:
            tags["ruf"] = f"mailto:dmarc-forensics@{ORG_DOMAIN}"
    elif how == "fo":
        tags["fo"] = "0" if tags.get("fo") == "1" else "1"
    if how in ("pct", "pct_lower") or tags == before:  # pct always changes, so the record always does
        current = int(tags.get("pct", "100"))
        lower = [p for p in (10, 25, 50, 75) if p < current]
        choices = (
            lower if how == "pct_lower" and lower else [p for p in (10, 25, 50, 75, 100) if p != current]
        )
        tags["pct"] = str(rng.choice(choices))
