"""Generating the seeded organization: its users, domains and about a year of audit trail.

Pure data: no I/O, and no clock except the ``now_us`` passed in (or read once when it is omitted).
The same seed and ``now_us`` give the same organization, record for record. The trail is planned as
(time, change) steps, then written in time order through ``History``.
"""

from __future__ import annotations

import random
import string
import unicodedata
from functools import partial
from typing import Callable, List, Optional, Tuple

from ..timeutil import now_us as _clock_now_us
from .entities import (
    DAY_US,
    DESTROYED_DOMAIN,
    DOMAIN_ADMINS,
    FIRST_NAMES,
    IDN_DOMAIN,
    LAST_NAMES,
    ORG_DOMAIN,
    OWNER,
    PLAIN_ROLES,
    UNKNOWN_ACTIONS,
    USER_ADMIN,
    Record,
    SimDomain,
    SimUser,
)
from .history import History, dkim_key
from .org import Org

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
_SHOUTING = (5, 17)  # indexes of users whose stored email gains capital letters

Plan = List[Tuple[int, Callable[[int], Record]]]


def ascii_fold(text: str) -> str:
    """'José García' -> 'jose garcia': the local part of the email address."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if c in string.ascii_letters or c == " ").lower()


def _make_users(rng: random.Random) -> List[SimUser]:
    firsts, lasts = rng.sample(FIRST_NAMES, 25), rng.sample(LAST_NAMES, 25)
    users = []
    for first, last in zip(firsts, lasts):
        email = ascii_fold(f"{first} {last}").replace(" ", ".") + "@" + ORG_DOMAIN
        roles = sorted(rng.sample(PLAIN_ROLES, rng.randint(1, 3)))
        users.append(SimUser(email, f"{first} {last}", roles, rng.choice((None, "+1 555 0100"))))
    users[OWNER].roles = ["OrganizationAdminRole", "PolicyAdminRole", "UserAdminRole"]
    users[USER_ADMIN].roles = ["UserAdminRole", "AuditingRole"]
    for i in DOMAIN_ADMINS[1:]:
        users[i].roles = ["PolicyAdminRole", "DataAccessRole"]
    return users


def _make_domains(rng: random.Random, now: int) -> List[SimDomain]:
    domains = []
    for name, created_days, destroyed_days in _DOMAIN_SPECS:
        created = now - created_days * DAY_US + rng.randrange(DAY_US)
        destroyed = None if destroyed_days is None else now - destroyed_days * DAY_US + rng.randrange(DAY_US)
        dmarc = {"v": "DMARC1", "p": "none", "rua": f"mailto:dmarc-reports@{ORG_DOMAIN}"}
        domains.append(SimDomain(name, created, destroyed, dmarc, dkim_key=dkim_key(rng)))
    return domains


def _plan_users(rng: random.Random, h: History, start: int, now: int) -> Plan:
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
    suspect, t = h.users[rng.randrange(4, 25)], rng.randrange(start, now - 3 * DAY_US)
    plan.append((t, partial(h.role_change, target=suspect, grant="OrganizationAdminRole")))
    t += 2 * DAY_US + rng.randrange(DAY_US)
    plan.append((t, partial(h.role_change, target=suspect, revoke="OrganizationAdminRole")))
    for _ in range(3):  # equal timestamps: two users' logins, and one admin's profile + roles save
        t, (a, b) = rng.randrange(start, now), rng.sample(h.users, 2)
        plan += [(t, partial(h.login, user=a)), (t, partial(h.login, user=b))]
        t, target, admin = rng.randrange(start, now), h.pick_target(), h.users[USER_ADMIN]
        plan.append((t, partial(h.profile_update, target=target, actor=admin)))
        plan.append((t, partial(h.role_change, target=target, actor=admin)))
    return plan


def _plan_domains(rng: random.Random, h: History, start: int, now: int) -> Plan:
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
    main, t = h.domains[0], rng.randrange(start, now - 30 * DAY_US)
    for offset, how in ((0, "p_reject"), (3, "p_none"), (9, "p_reject"), (20, "pct_lower")):
        plan.append((t + offset * DAY_US, partial(h.dmarc_update, dom=main, how=how)))
    for action, dom in zip((*UNKNOWN_ACTIONS, UNKNOWN_ACTIONS[0]), h.domains[:3]):
        plan.append((rng.randrange(start, now), partial(h.source_action, dom=dom, action=action)))
    return plan


def generate_org(seed: int = 7, now_us: Optional[int] = None) -> Org:
    """The demo organization: 25 users, 6 domains (one IDN, one destroyed), about 1,700 records."""
    now = _clock_now_us() if now_us is None else now_us
    rng = random.Random(seed)
    history = History(rng, _make_users(rng), _make_domains(rng, now))
    start = now - _HISTORY_DAYS * DAY_US
    plan = _plan_users(rng, history, start, now) + _plan_domains(rng, history, start, now)
    plan.sort(key=lambda step: step[0])  # stable: equal timestamps keep their planned order
    return Org(seed, history, [write(ts) for ts, write in plan])


def generate_shallow_org(users: int, records_each: int, seed: int = 7, now_us: Optional[int] = None) -> Org:
    """Many users with a few recent logins each and no domains: the run where every stream is shallow."""
    now = _clock_now_us() if now_us is None else now_us
    rng = random.Random(seed)
    people = [SimUser(f"user{i:05d}@{ORG_DOMAIN}", f"User {i}", ["DataAccessRole"]) for i in range(users)]
    history = History(rng, people, [])
    plan = [(rng.randrange(now - DAY_US, now), user) for user in people for _ in range(records_each)]
    plan.sort(key=lambda step: step[0])
    return Org(seed, history, [history.login(ts, user) for ts, user in plan])


def generate_wide_org(users: int, domains: int, seed: int = 7, now_us: Optional[int] = None) -> Org:
    """Many users and domains with one old record each (a login, a domain's creation, 30 days
    ago): many streams and no recent activity, for benchmarks that add it as they run."""
    if users <= max(DOMAIN_ADMINS):
        raise ValueError(
            f"a wide organization needs more than {max(DOMAIN_ADMINS)} users (its domain admins)"
        )
    now = _clock_now_us() if now_us is None else now_us
    rng = random.Random(seed)
    people = [SimUser(f"user{i:05d}@{ORG_DOMAIN}", f"User {i}", ["DataAccessRole"]) for i in range(users)]
    people[OWNER].roles = ["OrganizationAdminRole", "PolicyAdminRole", "UserAdminRole"]
    born = now - 30 * DAY_US
    names = [SimDomain(f"d{i:05d}.example", born, dmarc={"v": "DMARC1", "p": "none"}) for i in range(domains)]
    history = History(rng, people, names)
    records = [history.login(born + 1 + i, user) for i, user in enumerate(people)]
    records += [history.create(born + 1 + i, dom) for i, dom in enumerate(names)]
    records.sort(key=lambda r: str(r["created_at"]))
    return Org(seed, history, records)
