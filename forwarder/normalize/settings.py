"""Security settings among a record's changes, recognised by their field name whatever the action
(an organization's settings, a user's own two-factor switch in ``user.update``), and whether a change
weakened them: ``emailauth.audit.settings``.

The API documents no settings action, so nothing is assumed about the action or the key beyond its
name (``changes.safe_name``, split on ``_``). A name is read as the first kind it fits:

=============================  ===============================================  ==============================
reason                         field name                                       weakened when
=============================  ===============================================  ==============================
``password_policy_weakened``   ``password``/``passwd`` and ``min``/``length``   the number lowered or removed
                               ... and ``expiry``/``age``/``rotation``          raised, or 0 / removed (never)
                               ... anything else (``require_*``, complexity)    switched off
``session_lengthened``         ``session``/``idle`` and a duration word         raised, or 0 / removed (never)
``lockout_weakened``           ``lockout``, ``failed_login``, ``attempts``      a limit raised or removed; off
``ip_restriction_removed``     ``ip`` and ``allow``/``whitelist``/``restrict``  a list emptied, ``0.0.0.0/0``
                               (or ``allowlist``)                               or ``::/0`` added; off
``mfa_disabled``               ``2fa``, ``mfa``, ``otp``, ``totp``,             switched off
                               ``two_factor``, ``multi_factor``
``sso_disabled``               ``sso``, ``saml``, ``single_sign_on``            switched off
=============================  ===============================================  ==============================

Switched off: ``true``/``on``/``enabled``/``required``/``enforced``/``yes`` before, ``false``/
``off``/``disabled``/``optional``/``no`` or null after. A value read neither way gives no verdict:
the setting is listed as changed, never as weakened. Only change pairs are read (a lone value has no
before). Fields: ``changed`` and ``weakened_settings`` (field names), ``weakened``,
``weakened_reasons`` (the reasons above, sorted), ``mfa_disabled``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .changes import as_pair
from .memo import text_cache

_ON = frozenset({"true", "on", "enabled", "enable", "required", "enforced", "yes", "mandatory"})
_OFF = frozenset({"false", "off", "disabled", "disable", "optional", "no", "none", "not_required"})
_OPEN_RANGES = frozenset({"0.0.0.0/0", "::/0"})
_IP_LIST = frozenset({"allow", "allowed", "whitelist", "restrict", "restriction", "restrictions", "ranges"})
_DURATION = frozenset({"timeout", "duration", "length", "lifetime", "ttl", "expiry", "expiration", "minutes"})


def _switch(value: Any) -> Optional[bool]:
    """On (True), off (False) or neither (None); null is off: the setting is gone."""
    if value is None or value is True or value is False:
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower().replace("-", "_").replace(" ", "_")
        return True if word in _ON else False if word in _OFF else None
    return None


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def switched_off(before: Any, after: Any) -> bool:
    return _switch(before) is True and _switch(after) is False


def lowered(before: Any, after: Any) -> bool:
    """A minimum lowered or removed."""
    old, new = _number(before), _number(after)
    if old is None or old <= 0:
        return switched_off(before, after)
    return after is None or (new is not None and new < old)


def raised(before: Any, after: Any) -> bool:
    """A limit raised, or lifted (0 or removed: never)."""
    old, new = _number(before), _number(after)
    if old is None or old <= 0:
        return switched_off(before, after)
    return after is None or (new is not None and (new == 0 or new > old))


def _entries(value: Any) -> List[str]:
    if isinstance(value, list):
        return [str(item).strip() for item in value if item not in (None, "")]
    if isinstance(value, str):
        return [part for part in value.replace(",", " ").split() if part]
    return []


def opened(before: Any, after: Any) -> bool:
    """An allow-list emptied or opened to every address, or its switch turned off."""
    if switched_off(before, after):
        return True
    old, new = _entries(before), _entries(after)
    if old and not new and (after is None or isinstance(after, (list, str))):
        return True
    return bool(_OPEN_RANGES.intersection(new) - set(old))


Judge = Callable[[Any, Any], bool]


@text_cache(4096)  # a trail repeats its change keys
def kind_of(name: str) -> Optional[Tuple[str, Judge]]:
    """The reason a weakening of the setting called ``name`` (a field name) gives, and how it is
    judged; None when the name is not a security setting's."""
    words = frozenset(name.split("_"))
    if words & {"password", "passwd"}:
        if words & {"min", "minimum", "length"}:
            return "password_policy_weakened", lowered
        if words & {"expiry", "expiration", "expires", "age", "rotation", "days"}:
            return "password_policy_weakened", raised
        return "password_policy_weakened", switched_off
    if words & {"session", "idle"} and words & _DURATION:
        return "session_lengthened", raised
    if "lockout" in words or "failed_login" in name or "attempts" in words:
        if words & {"attempts", "threshold", "limit", "max"}:
            return "lockout_weakened", raised
        return "lockout_weakened", switched_off
    if "allowlist" in words or (words & {"ip", "ips"} and words & _IP_LIST):
        return "ip_restriction_removed", opened
    if words & {"2fa", "mfa", "otp", "totp", "tfa"} or "two_factor" in name or "multi_factor" in name:
        return "mfa_disabled", switched_off
    if words & {"sso", "saml"} or "single_sign_on" in name:
        return "sso_disabled", switched_off
    return None


def analyze(change_map: Mapping[Any, Any], names: Mapping[Any, str]) -> Optional[Dict[str, Any]]:
    """``emailauth.audit.settings`` of a record's changes (``names``: ``changes.safe_names`` of
    them), or None when no change pair is a security setting's."""
    changed: List[str] = []
    weakened: List[str] = []
    reasons = set()
    for key, name in names.items():
        kind = kind_of(name)
        if kind is None:
            continue
        pair = as_pair(change_map[key])
        if pair is None:
            continue
        changed.append(name)
        reason, judge = kind
        if judge(*pair):
            weakened.append(name)
            reasons.add(reason)
    if not changed:
        return None
    return {
        "changed": sorted(changed),
        "weakened": bool(weakened),
        "weakened_reasons": sorted(reasons),
        "weakened_settings": sorted(weakened),
        "mfa_disabled": "mfa_disabled" in reasons,
    }
