"""Detection scenarios for the simulator: the attacks the shipped Sigma rules look for, each beside
benign lookalikes (a tightened DMARC policy, an admin role removed, a non-admin role granted, ...).

``seeded_org`` keeps the generated organization's users, domains, logins and profile updates (noise
no rule should match) and replaces its role and domain history by the scenarios, so that what each
rule must find is known exactly: every ``Seeded`` record names the rules that must fire on it (none
for a lookalike), and ``burst_actors`` the actors each burst correlation must report. Scenarios are
an hour apart, from three days before ``now``; of the bursts, one sits inside one 10-minute bin and the
others straddle a bin's edge (fixed bins split them: the correlations slide).
``audit-forwarder simulate --scenarios`` serves this organization.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from ..timeutil import format_us
from ..timeutil import now_us as _clock_now_us
from .entities import DAY_US, ORG_DOMAIN, Record, dmarc_text
from .generate import generate_org
from .org import Org

ADMIN_GRANTED = "emailauth_admin_role_granted"
SELF_ESCALATION = "emailauth_self_escalation"
ROLE_BURST = "emailauth_role_change_burst"
LOGIN_BURST = "emailauth_login_burst"
BURSTS = (ROLE_BURST, LOGIN_BURST)  # the correlations: they report actors, not records
DMARC_WEAKENED = "emailauth_dmarc_weakened"
DMARC_REPORTING = "emailauth_dmarc_reporting_removed"
SPF_WEAKENED = "emailauth_spf_weakened"
SPF_LOOKUPS = "emailauth_spf_over_lookup_limit"
DKIM_REVOKED = "emailauth_dkim_key_revoked"
DKIM_WEAKENED = "emailauth_dkim_weakened"
AUDIT_REMOVED = "emailauth_audit_role_removed"
DOMAIN_DELETED = "emailauth_domain_deleted"
UNKNOWN_ACTION = "emailauth_unknown_action"
MFA_DISABLED = "emailauth_mfa_disabled"
SETTING_WEAKENED = "emailauth_security_setting_weakened"

_MINUTE = 60_000_000
_SECOND = 1_000_000
_BIN = 10 * _MINUTE  # the burst correlations' timespan
_RUA = f"mailto:dmarc-reports@{ORG_DOMAIN}"
_KEY = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAv3Scenario"
_NEW_KEY = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAn3wRotated"
_ORG_NAME = "Acme Widgets"  # the object of an organization settings change
_NOISE_ACTIONS = frozenset({"user.login", "user.update"})
_PLAIN = ["ThreatFeedSubmissionRole"]  # a role no rule watches
_MANY = [f"spf{n}.mail.example" for n in range(11)]
_DM, _SP, _DK = "DMARC Record Updated", "SPF Record Updated", "DKIM Record Updated"  # action phrases


@dataclass(frozen=True)
class Seeded:
    record: Record
    rules: FrozenSet[str]  # the rules that must match this record; empty for a lookalike
    note: str


def _spf(*includes: str, end: str = "-all") -> str:
    return " ".join(["v=spf1", *(f"include:{name}" for name in includes), end])


def _dmarc(**tags: str) -> str:
    return dmarc_text({"v": "DMARC1", **tags})


# (rules, note, actor, target, roles before, roles after), by user index.
_ROLE_CASES: List[Tuple[Tuple[str, ...], str, int, int, List[str], List[str]]] = [
    ((ADMIN_GRANTED,), "OrganizationAdminRole granted", 0, 5, _PLAIN, [*_PLAIN, "OrganizationAdminRole"]),
    (
        (ADMIN_GRANTED, SELF_ESCALATION),
        "UserAdminRole self-granted",
        6,
        6,
        _PLAIN,
        [*_PLAIN, "UserAdminRole"],
    ),
    ((), "lookalike: admin role removed", 0, 7, ["PolicyAdminRole", *_PLAIN], _PLAIN),
    ((), "lookalike: non-admin role granted", 1, 8, _PLAIN, [*_PLAIN, "ReportRecipientRole"]),
    ((), "lookalike: non-admin role self-granted", 9, 9, _PLAIN, [*_PLAIN, "DataAccessRole"]),
    ((), "lookalike: a role merely named admin", 0, 10, _PLAIN, [*_PLAIN, "SuperAdminRole"]),
    ((), "lookalike: all roles removed (no rule of its own)", 1, 11, _PLAIN, []),
    ((AUDIT_REMOVED,), "AuditingRole removed", 0, 13, ["AuditingRole", *_PLAIN], _PLAIN),
    ((), "lookalike: AuditingRole granted", 0, 14, _PLAIN, ["AuditingRole", *_PLAIN]),
]
# (rules, note, change key, before, after, domain index, action phrase) of domain.update records.
_RECORD_CASES: List[Tuple[Tuple[str, ...], str, str, Optional[str], Optional[str], int, str]] = [
    ((DMARC_WEAKENED,), "p=reject relaxed to p=none", "dmarc_txt_record",
     _dmarc(p="reject", rua=_RUA), _dmarc(p="none", rua=_RUA), 0, _DM),
    ((DMARC_REPORTING,), "aggregate reports removed", "dmarc_txt_record",
     _dmarc(p="reject", rua=_RUA), _dmarc(p="reject"), 1, _DM),
    ((DMARC_WEAKENED, DMARC_REPORTING), "record deleted", "dmarc_txt_record",
     _dmarc(p="quarantine", rua=_RUA), None, 2, _DM),
    ((), "lookalike: p=none tightened to p=quarantine", "dmarc_txt_record",
     _dmarc(p="none", rua=_RUA), _dmarc(p="quarantine", rua=_RUA), 1, _DM),
    ((), "lookalike: reports moved to another address", "dmarc_txt_record",
     _dmarc(p="reject", rua=_RUA), _dmarc(p="reject", rua="mailto:d@reports.example"), 0, _DM),
    ((SPF_WEAKENED,), "opened with +all", "spf_txt_record",
     _spf("_spf.google.com"), _spf("_spf.google.com", end="+all"), 0, _SP),
    ((SPF_WEAKENED,), "~all relaxed to ?all, under another key", "txt_record",
     _spf("sendgrid.net", end="~all"), _spf("sendgrid.net", end="?all"), 1, _SP),
    ((SPF_WEAKENED, SPF_LOOKUPS), "grown past 10 lookups", "spf_txt_record",
     _spf(*_MANY[:3]), _spf(*_MANY), 2, _SP),
    ((), "lookalike: ~all tightened to -all", "spf_txt_record",
     _spf("mailgun.org", end="~all"), _spf("mailgun.org"), 0, _SP),
    ((), "lookalike: an include added", "spf_txt_record",
     _spf("mailgun.org"), _spf("mailgun.org", "sendgrid.net"), 1, _SP),
    ((DKIM_REVOKED,), "key revoked (empty p=)", "dkim_txt_record",
     f"v=DKIM1; k=rsa; p={_KEY}", "v=DKIM1; k=rsa; p=", 0, _DK),
    ((DKIM_REVOKED,), "key record removed, under another key", "selector1_domainkey",
     f"v=DKIM1; p={_KEY}", None, 1, _DK),
    ((), "lookalike: key rotated", "dkim_txt_record",
     f"v=DKIM1; k=rsa; p={_KEY}", f"v=DKIM1; k=rsa; p={_NEW_KEY}", 2, _DK),
    ((), "lookalike: revoked key restored", "dkim_txt_record",
     "v=DKIM1; k=rsa; p=", f"v=DKIM1; k=rsa; p={_KEY}", 0, _DK),
    ((DKIM_WEAKENED,), "testing flag t=y added", "dkim_txt_record",
     f"v=DKIM1; k=rsa; p={_KEY}", f"v=DKIM1; k=rsa; t=y; p={_KEY}", 1, _DK),
    ((), "lookalike: testing flag removed", "dkim_txt_record",
     f"v=DKIM1; k=rsa; t=y; p={_KEY}", f"v=DKIM1; k=rsa; p={_KEY}", 2, _DK),
    ((SPF_WEAKENED,), "-all replaced by a redirect to another domain", "spf_txt_record",
     _spf("mailgun.org"), "v=spf1 redirect=_spf.attacker.example", 2, _SP),
    ((SPF_WEAKENED,), "every IPv4 host authorized by a /0 range", "spf_txt_record",
     _spf("mailgun.org"), "v=spf1 include:mailgun.org ip4:0.0.0.0/0 -all", 0, _SP),
    ((), "lookalike: a /24 range added", "spf_txt_record",
     _spf("mailgun.org"), "v=spf1 include:mailgun.org ip4:192.0.2.0/24 -all", 1, _SP),
]  # fmt: skip


class _Writer:
    """Appends records an hour apart (or at a given time) by the org's users on its live domains."""

    def __init__(self, org: Org, start_us: int) -> None:
        self.users = [user.email for user in org.users]
        self.domains = [dom.name for dom in org.domains if not dom.destroyed]
        self.ts = start_us
        self.out: List[Seeded] = []

    def add(self, rules: Tuple[str, ...], note: str, action: str, actor: int, obj: str,
            changes: Dict[str, Any], phrase: str = "", at: Optional[int] = None) -> None:  # fmt: skip
        if at is None:
            self.ts += 60 * _MINUTE
        record = {
            "action": phrase or action,
            "filterable_action": action,
            "user": self.users[actor],
            "object": obj,
            "changes": changes,
            "created_at": format_us(self.ts if at is None else at),
        }
        self.out.append(Seeded(record, frozenset(rules), note))

    def roles(self, rules: Tuple[str, ...], note: str, actor: int, target: int, before: List[str],
              after: List[str], at: Optional[int] = None) -> None:  # fmt: skip
        changes = {"roles": [before, after]}
        self.add(rules, note, "user.update_roles", actor, self.users[target], changes, at=at)


def _bursts(w: _Writer) -> None:
    """Actor 1 changes roles five times in five minutes inside one 10-minute bin, actor 3 five times
    in four minutes across a bin's edge (the bursts); actor 0 four times in one bin, actor 2 six times
    an hour apart, actor 4 five times spread over eleven minutes (lookalikes). No admin role is touched."""
    w.ts += 2 * 60 * _MINUTE
    start = w.ts - w.ts % _BIN + _BIN + _MINUTE
    for i in range(5):
        w.roles(
            (), f"burst by actor 1, {i + 1}/5", 1, 12 + i, _PLAIN, ["DataAccessRole"], start + i * _MINUTE
        )
    start += 3 * _BIN
    for i in range(4):
        w.roles((), f"lookalike: 4 changes in a bin, {i + 1}/4", 0, 12 + i, ["DataAccessRole"], _PLAIN,
                start + i * _MINUTE)  # fmt: skip
    edge = start + 3 * _BIN - _MINUTE  # a bin's edge
    for i in range(5):  # two changes before the edge, three after: two bins hold 2 and 3
        w.roles((), f"burst across a bin edge by actor 3, {i + 1}/5", 3, 12 + i, _PLAIN, ["DataAccessRole"],
                edge - 2 * _MINUTE + i * _MINUTE)  # fmt: skip
    spread = edge + 3 * _BIN
    for i in range(5):  # 165 s apart: any ten minutes hold four
        w.roles((), f"lookalike: 5 changes over 11 minutes, {i + 1}/5", 4, 17 + i, _PLAIN, ["DataAccessRole"],
                spread + i * 165 * _SECOND)  # fmt: skip
    w.ts = spread + 3 * _BIN
    for i in range(6):
        w.roles(
            (), f"lookalike: 6 changes an hour apart, {i + 1}/6", 2, 17 + i, _PLAIN, ["ReportRecipientRole"]
        )


def _logins(w: _Writer) -> None:
    """User 20 logs in ten times in six minutes across a bin's edge (the burst); user 21 twelve times
    eleven minutes apart, users 10 to 19 once each within two minutes (a team starting its day), and
    user 22 nine times in five minutes (lookalikes)."""
    w.ts += 2 * 60 * _MINUTE
    edge = w.ts - w.ts % _BIN + _BIN
    for i in range(10):
        at = edge - 3 * _MINUTE + i * 40 * _SECOND
        w.add((), f"login burst by user 20, {i + 1}/10", "user.login", 20, w.users[20], {}, at=at)
    start = edge + 3 * _BIN
    for i in range(12):
        w.add((), f"lookalike: logins 11 minutes apart, {i + 1}/12", "user.login", 21, w.users[21], {},
              at=start + i * 11 * _MINUTE)  # fmt: skip
    start += 3 * 60 * _MINUTE
    for user in range(10, 20):
        w.add((), f"lookalike: user {user} logs in with the team", "user.login", user, w.users[user], {},
              at=start + (user - 10) * 12 * _SECOND)  # fmt: skip
    start += 3 * _BIN
    for i in range(9):
        w.add((), f"lookalike: 9 logins in five minutes, {i + 1}/9", "user.login", 22, w.users[22], {},
              at=start + i * 35 * _SECOND)  # fmt: skip
    w.ts = start + 60 * _MINUTE


def _grants_elsewhere(w: _Writer) -> None:
    """Admin roles granted inside a user update and a user creation, not a role change."""
    update = {"full_name": ["Ana Lee", "Ana Lee-Ortiz"], "roles": [_PLAIN, [*_PLAIN, "PolicyAdminRole"]]}
    w.add((ADMIN_GRANTED,), "PolicyAdminRole granted inside a profile update", "user.update", 0, w.users[15],
          update)  # fmt: skip
    created = {"email": [None, w.users[16]], "roles": [[], ["ThreatAdminRole"]]}
    w.add((ADMIN_GRANTED,), "a user created with ThreatAdminRole", "user.create", 1, w.users[16], created)
    plain = {"email": [None, w.users[17]], "roles": [[], _PLAIN]}
    w.add((), "lookalike: a user created with a plain role", "user.create", 1, w.users[17], plain)


def _domain_actions(w: _Writer) -> None:
    name = f"retired.{ORG_DOMAIN}"
    created = {"name": [None, name], "dmarc_txt_record": [None, _dmarc(p="none", rua=_RUA)]}
    w.add((), "lookalike: domain created", "domain.create", 0, name, created, "Domain Created")
    w.add(
        (DOMAIN_DELETED,),
        "domain deleted",
        "domain.destroy",
        0,
        name,
        {"name": [name, None]},
        "Domain Deleted",
    )
    w.add((), "lookalike: routine DKIM source change", "dkim_record_source.update", 2, w.domains[0],
          {"source": ["customer_dns", "hosted"]}, "DKIM Record Source Updated")  # fmt: skip
    bimi = {"bimi_txt_record": [None, "v=BIMI1; l=https://example.org/b.svg"]}
    w.add((), "lookalike: routine BIMI record", "bimi_record_source.create", 3, w.domains[1], bimi,
          "BIMI Record Source Created")  # fmt: skip
    w.add((UNKNOWN_ACTION,), "an action outside the catalog", "api_client.create", 3, ORG_DOMAIN,
          {"client_id": [None, "c-7f3a"]}, "API Client Created")  # fmt: skip
    weaker = {"dmarc_record": [_dmarc(p="reject", rua=_RUA), _dmarc(p="none", rua=_RUA)]}
    w.add((DMARC_WEAKENED,), "DMARC relaxed under another action and key", "dmarc_record_source.update", 1,
          w.domains[1], weaker, "DMARC Record Source Updated")  # fmt: skip
    stronger = {"dmarc_record": [_dmarc(p="none", rua=_RUA), _dmarc(p="reject", rua=_RUA)]}
    w.add((), "lookalike: DMARC tightened under another key", "dmarc_record_source.update", 1, w.domains[2],
          stronger, "DMARC Record Source Updated")  # fmt: skip
    w.add((), "lookalike: documented action, display name", "domain.update", 0, w.domains[2],
          {"dmarc_updated_at": ["2026-01-01T00:00:00.000000Z", None]}, "Domain Updated")  # fmt: skip


# (rules, note, actor, changes) of organization.update records, an action outside the catalog (the API
# documents none for settings): the unknown-action rule (low) matches each, the lookalikes too.
_NET = "192.0.2.0/24"
_SETTINGS_CASES: List[Tuple[Tuple[str, ...], str, int, Dict[str, Any]]] = [
    ((MFA_DISABLED,), "two-factor no longer required", 0, {"two_factor_required": [True, False]}),
    ((SETTING_WEAKENED,), "password minimum lowered", 1, {"password_min_length": [14, 8]}),
    ((SETTING_WEAKENED,), "IP allow-list emptied", 0, {"ip_allowlist": [[_NET], []]}),
    ((SETTING_WEAKENED,), "sessions without a timeout", 6, {"session_timeout_minutes": [30, 0]}),
    ((SETTING_WEAKENED,), "single sign-on no longer enforced", 0, {"sso_enforced": ["enforced", "optional"]}),
    ((), "lookalike: two-factor required", 0, {"two_factor_required": [False, True]}),
    ((), "lookalike: password minimum raised", 1, {"password_min_length": [8, 14]}),
    ((), "lookalike: two-factor method changed", 0, {"mfa_method": ["sms", "totp"]}),
    ((), "lookalike: sessions shortened, allow-list grown", 6,
     {"session_timeout_minutes": [480, 30], "ip_allowlist": [[_NET], [_NET, "198.51.100.0/24"]]}),
    ((), "lookalike: a setting that is no security's", 1, {"default_report_period": ["7d", "30d"]}),
]  # fmt: skip


def _settings(w: _Writer) -> None:
    """Security settings changed for the organization, and a user's two-factor switched off by an
    admin (a known action: no unknown-action match) beside one switched on."""
    for rules, note, actor, changes in _SETTINGS_CASES:
        w.add((*rules, UNKNOWN_ACTION), note, "organization.update", actor, _ORG_NAME, changes,
              "Organization Settings Updated")  # fmt: skip
    w.add((MFA_DISABLED,), "a user's two-factor switched off", "user.update", 0, w.users[23],
          {"mfa_enabled": [True, False]})  # fmt: skip
    w.add((), "lookalike: a user's two-factor switched on", "user.update", 0, w.users[24],
          {"mfa_enabled": [False, True]})  # fmt: skip


def scenarios(org: Org, now_us: int) -> List[Seeded]:
    """Every scenario and lookalike, oldest first, using ``org``'s users and live domains."""
    w = _Writer(org, now_us - 3 * DAY_US)
    for case in _ROLE_CASES:
        w.roles(*case)
    _bursts(w)
    _logins(w)
    for rules, note, key, before, after, domain, phrase in _RECORD_CASES:
        w.add(rules, note, "domain.update", 0, w.domains[domain], {key: [before, after]}, phrase)
    _grants_elsewhere(w)
    _domain_actions(w)
    _settings(w)
    return w.out


def burst_actors(org: Org, rule: str = ROLE_BURST) -> List[str]:
    """The actors a burst correlation must report (see ``_bursts`` and ``_logins``), sorted."""
    users = {ROLE_BURST: (1, 3), LOGIN_BURST: (20,)}[rule]
    return sorted(org.users[i].email for i in users)


def seeded_org(seed: int = 7, now_us: Optional[int] = None) -> Tuple[Org, List[Seeded]]:
    """The generated organization's noise plus the scenarios, and the scenarios with their labels."""
    now = _clock_now_us() if now_us is None else now_us
    base = generate_org(seed, now)
    seeded = scenarios(base, now)
    noise = [r for r in base.all_records() if r["filterable_action"] in _NOISE_ACTIONS]
    # The same users and domains (the users endpoint and the domain streams agree with the records).
    return Org(seed, base._history, noise + [s.record for s in seeded]), seeded
