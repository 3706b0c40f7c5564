"""The seeded organization behind the API simulator: users, domains and their audit trail.

Pure data: no I/O, and no clock except the ``now_us`` passed in (or read once when it is omitted).
The same seed and ``now_us`` give the same organization, record for record. The history is written
in time order through ``_History``, which holds the mutable state (roles, DMARC records, ...) so that
every ``[before, after]`` pair agrees with the record before it and with the users endpoint.
"""

from __future__ import annotations

import bisect
import calendar
import random
import string
import threading
import unicodedata
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Tuple

from .timeutil import format_us, from_us, to_us
from .timeutil import now_us as _clock_now_us

Record = Dict[str, Any]

ORG_DOMAIN = "acme-widgets.example"
IDN_DOMAIN = "bücher.example"  # ASCII (punycode) form: xn--bcher-kva.example
DESTROYED_DOMAIN = "legacy-acme.example"
DOMAIN_HISTORY_MONTHS = 13

ROLES = (
    "DataAccessRole",
    "OrganizationAdminRole",
    "PolicyAdminRole",
    "UserAdminRole",
    "ThreatFeedSubmissionRole",
    "ReportRecipientRole",
    "ThreatAdminRole",
    "AuditingRole",
)
ADMIN_ROLES = ("OrganizationAdminRole", "PolicyAdminRole", "UserAdminRole", "ThreatAdminRole")
_PLAIN_ROLES = tuple(r for r in ROLES if r not in ADMIN_ROLES)
UNKNOWN_ACTIONS = ("dkim_record_source.update", "bimi_record_source.create")

_DAY_US = 86_400 * 1_000_000
# The regular trail spans 380 days: inside 13 calendar months (>= 395 days) with a margin, so a
# client's idea of "13 months" cannot disagree with the server's about any generated record.
_HISTORY_DAYS = 380
# (name, created days ago, destroyed days ago): the first four predate the domain history window.
_DOMAIN_SPECS: Tuple[Tuple[str, int, Optional[int]], ...] = (
    (ORG_DOMAIN, 640, None),
    ("mail." + ORG_DOMAIN, 520, None),
    ("acme-shop.example", 450, None),
    (DESTROYED_DOMAIN, 600, 95),
    (IDN_DOMAIN, 300, None),
    ("news." + ORG_DOMAIN, 120, None),
)
_FIRST = (
    "Alice", "Bruno", "Chloé", "Daniel", "Emma", "Farid", "Grace", "Hiro", "Ingrid", "José", "Kate",
    "Liam", "Maria", "Noah", "Olga", "Priya", "Quentin", "Rosa", "Sven", "Tara", "Umar", "Vera",
    "Wei", "Yusuf", "Zoë", "Aoife", "Björn", "Carmen", "Dmitri", "Elif",
)  # fmt: skip
_LAST = (
    "Anderson", "Bauer", "Chen", "Dubois", "Eriksen", "Fischer", "García", "Hoffmann", "Ito",
    "Jansen", "Kowalski", "Lindqvist", "Müller", "Nakamura", "O'Neill", "Petrov", "Quinn", "Rossi",
    "Silva", "Tanaka", "Usman", "Varga", "Walsh", "Xu", "Yilmaz", "Zimmermann", "Novak", "Moreau",
)  # fmt: skip
_TIME_ZONES = ("America/New_York", "America/Los_Angeles", "Europe/London", "Europe/Berlin", "Asia/Tokyo")
_SPF_INCLUDES = ("_spf.google.com", "spf.protection.outlook.com", "sendgrid.net", "mailgun.org",
                 "_spf.salesforce.com", "servers.mcsv.net")  # fmt: skip
_DMARC_ORDER = ("v", "p", "sp", "pct", "rua", "ruf", "adkim", "aspf", "fo")
_POLICIES = ("none", "quarantine", "reject")
_OWNER, _USER_ADMIN, _DOMAIN_ADMINS = 0, 1, (0, 2, 3)  # indexes of users whose roles never change
_SHOUTING = (5, 17)  # indexes of users whose stored email gains capital letters


@dataclass
class SimUser:
    email: str
    full_name: str
    roles: List[str]
    phone: Optional[str] = None
    time_zone: str = "America/New_York"

    def as_api(self) -> Record:
        """The element of the users endpoint."""
        return {"email": self.email, "full_name": self.full_name, "roles": list(self.roles)}


@dataclass
class SimDomain:
    name: str
    created_us: int
    destroyed_us: Optional[int] = None
    dmarc: Dict[str, str] = field(default_factory=dict)
    dmarc_updated_us: int = 0
    spf_includes: List[str] = field(default_factory=lambda: ["_spf.google.com"])
    spf_all: str = "~all"
    dkim_selector: str = "s1"
    dkim_key: str = ""
    dkim_source: str = "customer_dns"

    @property
    def destroyed(self) -> bool:
        return self.destroyed_us is not None

    def live_at(self, ts: int) -> bool:
        return self.created_us < ts and (self.destroyed_us is None or ts < self.destroyed_us)


def ascii_fold(text: str) -> str:
    """'José García' -> 'jose garcia': the local part of the email address."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if c in string.ascii_letters or c == " ").lower()


def months_before(us: int, months: int) -> int:
    """The same wall-clock instant ``months`` calendar months earlier (day clamped to month length)."""
    dt = from_us(us)
    year, month0 = divmod(dt.year * 12 + dt.month - 1 - months, 12)
    day = min(dt.day, calendar.monthrange(year, month0 + 1)[1])
    return to_us(dt.replace(year=year, month=month0 + 1, day=day))


def domain_history_start_us(now_us: int) -> int:
    """The oldest created_at the domain trail still returns at ``now_us`` (13 calendar months)."""
    return months_before(now_us, DOMAIN_HISTORY_MONTHS)


def dmarc_text(tags: Dict[str, str]) -> str:
    return "; ".join(f"{k}={tags[k]}" for k in _DMARC_ORDER if k in tags)


def _record(action: str, filterable: str, actor: str, obj: str, changes: Record, ts: int) -> Record:
    return {
        "action": action,
        "filterable_action": filterable,
        "user": actor,
        "object": obj,
        "changes": changes,
        "created_at": format_us(ts),
    }


class _History:
    """The organization's state while its trail is written, oldest first. Each method returns one record."""

    def __init__(self, rng: random.Random, users: List[SimUser], domains: List[SimDomain]) -> None:
        self.rng = rng
        self.users = users
        self.domains = domains

    def pick_target(self) -> SimUser:
        """A user whose roles may change: everyone but the owner and the fixed admins."""
        return self.rng.choice(self.users[4:])

    def login(self, ts: int, user: SimUser) -> Record:
        return _record("user.login", "user.login", user.email, user.email, {}, ts)

    def profile_update(
        self, ts: int, target: SimUser, keys: Tuple[str, ...] = (), actor: Optional[SimUser] = None
    ) -> Record:
        keys = keys or tuple(self.rng.sample(("full_name", "phone", "time_zone"), self.rng.choice((1, 1, 2))))
        if actor is None:
            actor = target if self.rng.random() < 0.7 else self.users[_USER_ADMIN]
        changes: Record = {}
        for key in keys:
            before = getattr(target, key)
            after = self._new_profile_value(target, key)
            setattr(target, key, after)
            changes[key] = [before, after]
        return _record("user.update", "user.update", actor.email, target.email, changes, ts)

    def _new_profile_value(self, user: SimUser, key: str) -> Optional[str]:
        rng = self.rng
        if key == "email":  # someone re-typed the address with capitals; the service keeps it as typed
            local, _, domain = user.email.partition("@")
            return ".".join(p.capitalize() for p in local.split(".")) + "@" + domain
        if key == "full_name":
            return (
                user.full_name.split(" ")[0] + " " + rng.choice([n for n in _LAST if n not in user.full_name])
            )
        if key == "phone":
            return f"+1 555 01{rng.randrange(100):02d}"
        return rng.choice([z for z in _TIME_ZONES if z != user.time_zone])

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
                pool = ADMIN_ROLES if roll > 0.85 else _PLAIN_ROLES
                grant = self.rng.choice([r for r in pool if r not in before] or list(ROLES))
        target.roles = [r for r in before if r != revoke] + ([grant] if grant and grant not in before else [])
        actor = actor or self.users[self.rng.choice((_OWNER, _USER_ADMIN))]
        changes = {"roles": [before, list(target.roles)]}
        return _record("user.update_roles", "user.update_roles", actor.email, target.email, changes, ts)

    def _domain_record(self, ts: int, dom: SimDomain, phrase: str, action: str, changes: Record) -> Record:
        actor = self.users[self.rng.choice(_DOMAIN_ADMINS)]
        return _record(phrase, action, actor.email, dom.name, changes, ts)

    def create(self, ts: int, dom: SimDomain) -> Record:
        changes = {"name": [None, dom.name], "dmarc_txt_record": [None, dmarc_text(dom.dmarc)]}
        dom.dmarc_updated_us = ts
        return self._domain_record(ts, dom, "Domain Created", "domain.create", changes)

    def destroy(self, ts: int, dom: SimDomain) -> Record:
        return self._domain_record(ts, dom, "Domain Deleted", "domain.destroy", {"name": [dom.name, None]})

    def dmarc_update(self, ts: int, dom: SimDomain, how: str = "") -> Record:
        before = dmarc_text(dom.dmarc)
        _mutate_dmarc(self.rng, dom.dmarc, how)
        changes = {
            "dmarc_txt_record": [before, dmarc_text(dom.dmarc)],
            "dmarc_updated_at": [format_us(dom.dmarc_updated_us), format_us(ts)],
        }
        dom.dmarc_updated_us = ts
        return self._domain_record(ts, dom, "DMARC Record Updated", "domain.update", changes)

    def spf_update(self, ts: int, dom: SimDomain) -> Record:
        rng = self.rng
        before = _spf_text(dom)
        spare = [i for i in _SPF_INCLUDES if i not in dom.spf_includes]
        roll = rng.random()
        if roll < 0.45 and spare:
            dom.spf_includes.append(rng.choice(spare))
        elif roll < 0.7 and len(dom.spf_includes) > 1:
            dom.spf_includes.remove(rng.choice(dom.spf_includes))
        else:  # "?all" now and then: a weakening worth an alert
            dom.spf_all = rng.choice([q for q in ("-all", "~all", "?all") if q != dom.spf_all])
        changes = {"spf_txt_record": [before, _spf_text(dom)]}
        return self._domain_record(ts, dom, "SPF Record Updated", "domain.update", changes)

    def dkim_update(self, ts: int, dom: SimDomain) -> Record:
        before_selector, before_text = dom.dkim_selector, _dkim_text(dom)
        if self.rng.random() < 0.2:  # the old key is revoked in place: an empty p= tag
            dom.dkim_key = ""
            changes: Record = {}
        else:
            dom.dkim_selector = f"s{from_us(ts).year}{self.rng.choice(string.ascii_lowercase)}"
            dom.dkim_key = _dkim_key(self.rng)
            changes = {"dkim_selector": [before_selector, dom.dkim_selector]}
        changes["dkim_txt_record"] = [before_text, _dkim_text(dom)]
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


def _spf_text(dom: SimDomain) -> str:
    return " ".join(["v=spf1", *(f"include:{i}" for i in dom.spf_includes), dom.spf_all])


def _dkim_key(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "+/"
    return "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + "".join(rng.choice(alphabet) for _ in range(48))


def _dkim_text(dom: SimDomain) -> str:
    return f"v=DKIM1; k=rsa; p={dom.dkim_key}"


def _make_users(rng: random.Random) -> List[SimUser]:
    firsts, lasts = rng.sample(_FIRST, 25), rng.sample(_LAST, 25)
    users = []
    for first, last in zip(firsts, lasts):
        email = ascii_fold(f"{first} {last}").replace(" ", ".") + "@" + ORG_DOMAIN
        roles = sorted(rng.sample(_PLAIN_ROLES, rng.randint(1, 3)))
        users.append(SimUser(email, f"{first} {last}", roles, rng.choice((None, "+1 555 0100"))))
    users[_OWNER].roles = ["OrganizationAdminRole", "PolicyAdminRole", "UserAdminRole"]
    users[_USER_ADMIN].roles = ["UserAdminRole", "AuditingRole"]
    for i in _DOMAIN_ADMINS[1:]:
        users[i].roles = ["PolicyAdminRole", "DataAccessRole"]
    return users


def _make_domains(rng: random.Random, now: int) -> List[SimDomain]:
    domains = []
    for name, created_days, destroyed_days in _DOMAIN_SPECS:
        created = now - created_days * _DAY_US + rng.randrange(_DAY_US)
        destroyed = (
            None if destroyed_days is None else now - destroyed_days * _DAY_US + rng.randrange(_DAY_US)
        )
        dmarc = {"v": "DMARC1", "p": "none", "rua": f"mailto:dmarc-reports@{ORG_DOMAIN}"}
        domains.append(SimDomain(name, created, destroyed, dmarc, dkim_key=_dkim_key(rng)))
    return domains


Plan = List[Tuple[int, Callable[[int], Record]]]


def _plan_users(rng: random.Random, h: _History, start: int, now: int) -> Plan:
    plan: Plan = []
    for user in h.users:
        plan += [(rng.randrange(start, now), partial(h.login, user=user)) for _ in range(rng.randint(40, 80))]
    for _ in range(50):
        plan.append((rng.randrange(start, now), partial(h.profile_update, target=rng.choice(h.users))))
    for _ in range(35):
        plan.append((rng.randrange(start, now), partial(h.role_change, target=h.pick_target())))
    for i in _SHOUTING:  # the capitalised addresses arrive through a profile update
        plan.append(
            (rng.randrange(start, now), partial(h.profile_update, target=h.users[i], keys=("email",)))
        )
    # A short-lived org admin grant: the story an auditor looks for.
    suspect, t = h.users[rng.randrange(4, 25)], rng.randrange(start, now - 3 * _DAY_US)
    plan.append((t, partial(h.role_change, target=suspect, grant="OrganizationAdminRole")))
    t += 2 * _DAY_US + rng.randrange(_DAY_US)
    plan.append((t, partial(h.role_change, target=suspect, revoke="OrganizationAdminRole")))
    for _ in range(3):  # equal timestamps: two users' logins, and one admin's profile + roles save
        t, (a, b) = rng.randrange(start, now), rng.sample(h.users, 2)
        plan += [(t, partial(h.login, user=a)), (t, partial(h.login, user=b))]
        t, target, admin = rng.randrange(start, now), h.pick_target(), h.users[_USER_ADMIN]
        plan.append((t, partial(h.profile_update, target=target, actor=admin)))
        plan.append((t, partial(h.role_change, target=target, actor=admin)))
    return plan


def _plan_domains(rng: random.Random, h: _History, start: int, now: int) -> Plan:
    plan: Plan = []
    for dom in h.domains:
        end = dom.destroyed_us or now
        plan.append((dom.created_us, partial(h.create, dom=dom)))
        if dom.destroyed_us is not None:
            plan.append((dom.destroyed_us, partial(h.destroy, dom=dom)))
        for update, count in ((h.dmarc_update, 10), (h.spf_update, 3), (h.dkim_update, 2)):
            plan += [(rng.randrange(dom.created_us + 1, end), partial(update, dom=dom)) for _ in range(count)]
        t = rng.randrange(max(start, dom.created_us + 1), end)  # DMARC and SPF saved together
        plan += [(t, partial(h.dmarc_update, dom=dom)), (t, partial(h.spf_update, dom=dom))]
    # On the main domain, p=reject is relaxed to p=none for a few days, and pct lowered later.
    main, t = h.domains[0], rng.randrange(start, now - 30 * _DAY_US)
    for offset, how in ((0, "p_reject"), (3, "p_none"), (9, "p_reject"), (20, "pct_lower")):
        plan.append((t + offset * _DAY_US, partial(h.dmarc_update, dom=main, how=how)))
    for action, dom in zip((*UNKNOWN_ACTIONS, UNKNOWN_ACTIONS[0]), h.domains[:3]):
        plan.append((rng.randrange(start, now), partial(h.source_action, dom=dom, action=action)))
    return plan


class Org:
    """A generated organization. Records are shared, not copied: treat them as read-only."""

    def __init__(self, seed: int, history: _History, records: List[Record]) -> None:
        self.seed = seed
        self._history = history
        self._lock = threading.Lock()  # the simulator reads while a test adds activity
        self._records = list(records)
        self._domain_keys = {d.name.casefold() for d in history.domains}
        # Sorted views, rebuilt after a change: a deep stream is asked for hundreds of pages.
        self._sorted: Optional[List[Record]] = None
        self._trails: Dict[Tuple[str, str], Tuple[List[Record], List[str], List[Record]]] = {}

    @property
    def users(self) -> List[SimUser]:
        return self._history.users

    @property
    def domains(self) -> List[SimDomain]:
        return self._history.domains

    def all_records(self) -> List[Record]:
        """Every record once, oldest first (equal timestamps keep the order they were written)."""
        with self._lock:
            return list(self._sorted_records())

    def _sorted_records(self) -> List[Record]:
        """Caller holds the lock."""
        if self._sorted is None:
            self._sorted = sorted(self._records, key=_created_text)
            self._trails = {}
        return self._sorted

    def _changed(self) -> None:
        """Caller holds the lock."""
        self._sorted = None
        self._trails = {}

    def user_list(self) -> List[Record]:
        with self._lock:
            return [u.as_api() for u in self.users]

    def domain_list(self) -> List[Record]:
        """The live domains as a /v1/cp/domains list would give them (names in ASCII form)."""
        with self._lock:
            live = [d for d in self.domains if d.destroyed_us is None]
            return [{"id": i, "name": d.name.encode("idna").decode()} for i, d in enumerate(live, 1)]

    def records_for(
        self, object_type: str, name: str, now_us: int, start: str = "", end: str = "~"
    ) -> List[Record]:
        """A trail as the API scopes it, oldest first: the actor's actions for ``user`` (any case),
        the actions on a domain given in Unicode form for ``domain``, only back 13 months; with
        ``start``/``end`` (canonical created_at text, inclusive) only the records between them."""
        key = name.casefold()
        if object_type not in ("user", "domain") or (
            object_type == "domain" and key not in self._domain_keys
        ):
            return []
        trail, times, odd = self._trail(object_type, key)
        if object_type == "domain":
            start = max(start, format_us(domain_history_start_us(now_us)))
        found = trail[bisect.bisect_left(times, start) : bisect.bisect_right(times, end)]
        # Hostile records (add_raw_record) without a text created_at are served whatever the bounds.
        return sorted(found + odd, key=_created_text) if odd else found

    def _trail(self, object_type: str, key: str) -> Tuple[List[Record], List[str], List[Record]]:
        """One user's or domain's whole trail, oldest first, its created_at values, and the records
        whose created_at is not text (cached until a change: canonical timestamps sort as text, so
        a range is two bisections)."""
        with self._lock:
            everything = self._sorted_records()
            cached = self._trails.get((object_type, key))
            if cached is None:
                if object_type == "user":
                    trail = [r for r in everything if str(r.get("user", "")).casefold() == key]
                else:
                    trail = [
                        r
                        for r in everything
                        if str(r.get("object", "")).casefold() == key
                        and not str(r.get("filterable_action", "")).startswith("user.")
                    ]
                timed = [r for r in trail if isinstance(r.get("created_at"), str)]
                odd = [r for r in trail if not isinstance(r.get("created_at"), str)]
                cached = self._trails[(object_type, key)] = (timed, [r["created_at"] for r in timed], odd)
            return cached

    def add_activity(self, count: int, now_us: int) -> List[Record]:
        """``count`` new records after ``now_us``; every third one shares its predecessor's time."""
        h, rng = self._history, self._history.rng
        added: List[Record] = []
        ts = now_us
        with self._lock:
            for i in range(count):
                if i % 3 != 1:
                    ts += rng.randrange(1, 60_000_000)
                roll = rng.random()
                if roll < 0.75:
                    added.append(h.login(ts, rng.choice(h.users)))
                elif roll < 0.85:
                    added.append(h.profile_update(ts, rng.choice(h.users)))
                elif roll < 0.92:
                    added.append(h.role_change(ts, h.pick_target()))
                else:
                    added.append(h.dmarc_update(ts, rng.choice([d for d in h.domains if d.live_at(ts)])))
            self._records.extend(added)
            self._changed()
        return added

    def add_raw_record(self, record: Record) -> Record:
        """Any object as a record of its ``user``'s trail, as it is: hostile inputs for tests."""
        with self._lock:
            self._records.append(record)
            self._changed()
        return record

    def add_late_record(self, created_at_us: int) -> Record:
        """A login that reaches the API late, with an older ``created_at`` than records already served."""
        with self._lock:
            record = self._history.login(created_at_us, self._history.rng.choice(self.users))
            self._records.append(record)
            self._changed()
        return record

    def add_deep_stream(self, email: str, count: int, now_us: int, span_days: int = 300) -> SimUser:
        """A new user with ``count`` logins spread over the last ``span_days`` (some sharing a
        time): one deep stream for backlog benchmarks and tests. The users endpoint lists the user."""
        h, rng = self._history, random.Random(f"{self.seed}:{email}:{count}")
        user = SimUser(email, "Deep Backlog", ["DataAccessRole"])
        step = max(1, span_days * _DAY_US // max(count, 1))
        ts = now_us - span_days * _DAY_US
        added = []
        for i in range(count):
            if i % 7 == 3:  # every seventh record shares its predecessor's time (a profile save)
                added.append(h.profile_update(min(ts, now_us), user, actor=user))
                continue
            ts += rng.randrange(1, 2 * step)
            added.append(h.login(min(ts, now_us), user))
        with self._lock:
            h.users.append(user)
            self._records.extend(added)
            self._changed()
        return user


def generate_org(seed: int = 7, now_us: Optional[int] = None) -> Org:
    """The demo organization: 25 users, 6 domains (one IDN, one destroyed), about 1,700 records."""
    now = _clock_now_us() if now_us is None else now_us
    rng = random.Random(seed)
    history = _History(rng, _make_users(rng), _make_domains(rng, now))
    start = now - _HISTORY_DAYS * _DAY_US
    plan = _plan_users(rng, history, start, now) + _plan_domains(rng, history, start, now)
    plan.sort(key=lambda step: step[0])  # stable: equal timestamps keep their planned order
    return Org(seed, history, [write(ts) for ts, write in plan])


def generate_shallow_org(users: int, records_each: int, seed: int = 7, now_us: Optional[int] = None) -> Org:
    """Many users with a few recent logins each and no domains: the run where every stream is shallow."""
    now = _clock_now_us() if now_us is None else now_us
    rng = random.Random(seed)
    people = [SimUser(f"user{i:05d}@{ORG_DOMAIN}", f"User {i}", ["DataAccessRole"]) for i in range(users)]
    history = _History(rng, people, [])
    plan = [(rng.randrange(now - _DAY_US, now), user) for user in people for _ in range(records_each)]
    plan.sort(key=lambda step: step[0])
    return Org(seed, history, [history.login(ts, user) for ts, user in plan])


def _created_text(record: Record) -> str:
    """created_at as text for ordering; a hostile record's odd value still sorts somewhere."""
    return str(record.get("created_at", ""))
