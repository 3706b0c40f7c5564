"""DMARC TXT records: "did this change weaken the policy?" (RFC 7489, RFC 9091, DMARCbis).

Records are compared by their effective values after defaults: ``sp`` defaults to ``p``, ``np`` to
``sp``, ``pct`` to 100, ``t`` to ``n``, ``adkim``/``aspf`` to ``r``. A change is *weakened* for
any of these reasons (codes as emitted):

* ``record_removed`` / ``record_invalid``: a valid record is gone, or no longer a valid DMARC record;
* ``p_weakened``, ``sp_weakened``, ``np_weakened``: reject -> quarantine -> none, also when a tag is
  removed and the inherited value is weaker;
* ``pct_lowered`` (for a p/sp/np that stays quarantine or reject); ``testing_enabled`` (``t`` n -> y
  while some policy enforces); ``adkim_relaxed``, ``aspf_relaxed`` (s -> r).

Losing aggregate or failure reports is reported apart, as *visibility* reasons: ``rua_removed``,
``ruf_removed`` (no reporting URI left, which includes the record being removed or made invalid).
A change from no valid record (absent or broken) can weaken nothing: nothing was being enforced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Tuple

from .tags import parse_tags, removal_reason

_STRENGTH = {"none": 0, "quarantine": 1, "reject": 2}


@dataclass(frozen=True)
class Policy:
    """The effective policy of a valid record, defaults applied."""

    p: str
    sp: str
    np: str
    pct: int
    testing: bool
    adkim: str
    aspf: str
    rua: bool
    ruf: bool
    # What a change must keep not to weaken the policy, pct aside (``p>=1`` for quarantine or reject,
    # ``t=n``, ``adkim=s``...): a change that keeps all of it and does not lower pct weakens nothing,
    # which one subset test tells (most changes; the policy is cached by its text, this made once).
    holds: FrozenSet[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        held = [
            f"{tag}>={rank}"
            for tag in ("p", "sp", "np")
            for rank in range(1, _STRENGTH[getattr(self, tag)] + 1)
        ]
        if not self.testing:
            held.append("t=n")
        if self.adkim == "s":
            held.append("adkim=s")
        if self.aspf == "s":
            held.append("aspf=s")
        object.__setattr__(self, "holds", frozenset(held))  # frozen: set once, here


def _policy_value(tags: Dict[str, str], name: str) -> Optional[str]:
    value = tags.get(name, "").lower()
    return value if value in _STRENGTH else None


def _pct(value: Optional[str]) -> int:
    try:
        number = int(value or "100")
    except ValueError:
        return 100
    return number if 0 <= number <= 100 else 100


def effective(tags: Dict[str, str]) -> Optional[Policy]:
    """The record's policy, or None when it is not a usable DMARC record.

    It must start with ``v=DMARC1``. A missing or unknown ``p`` makes it unusable unless ``rua`` is
    set, in which case receivers act as if ``p=none`` (RFC 7489 section 6.6.3). Unknown values of
    the other tags fall back to their defaults.
    """
    if not tags or next(iter(tags)) != "v" or tags["v"] != "DMARC1":
        return None
    rua = bool(tags.get("rua"))
    p = _policy_value(tags, "p") or ("none" if rua else None)
    if p is None:
        return None
    sp = _policy_value(tags, "sp") or p
    return Policy(
        p=p,
        sp=sp,
        np=_policy_value(tags, "np") or sp,
        pct=_pct(tags.get("pct")),
        testing=tags.get("t", "").lower() == "y",
        adkim="s" if tags.get("adkim", "").lower() == "s" else "r",
        aspf="s" if tags.get("aspf", "").lower() == "s" else "r",
        rua=rua,
        ruf=bool(tags.get("ruf")),
    )


def _weakening(old: Policy, new: Policy) -> List[str]:
    # Spelled out tag by tag rather than looped over: this runs on every DMARC change.
    reasons = []
    strength = _STRENGTH
    if strength[new.p] < strength[old.p]:
        reasons.append("p_weakened")
    if strength[new.sp] < strength[old.sp]:
        reasons.append("sp_weakened")
    if strength[new.np] < strength[old.np]:
        reasons.append("np_weakened")
    # pct and t only act on an enforcing policy: lowering pct while moving none -> quarantine, or
    # quarantine -> reject, still tightens, and test mode on p=none changes nothing.
    if new.pct < old.pct and (
        (old.p != "none" and new.p == old.p)
        or (old.sp != "none" and new.sp == old.sp)
        or (old.np != "none" and new.np == old.np)
    ):
        reasons.append("pct_lowered")
    if new.testing and not old.testing and (new.p != "none" or new.sp != "none" or new.np != "none"):
        reasons.append("testing_enabled")
    if old.adkim == "s" and new.adkim == "r":
        reasons.append("adkim_relaxed")
    if old.aspf == "s" and new.aspf == "r":
        reasons.append("aspf_relaxed")
    return reasons


def read(text: str) -> Tuple[Dict[str, str], Optional[Policy]]:
    """A record's tags and policy (not cached here: ``audit.py`` caches what it keeps of them)."""
    tags = parse_tags(text)
    return tags, effective(tags)


def reasons(
    old: Optional[Policy], new: Optional[Policy], after: Optional[str]
) -> Tuple[List[str], List[str]]:
    """(weakened, visibility) reasons of a change from policy ``old`` to ``new`` (None: no valid
    record on that side), ``after`` the new record's text."""
    if old is None:
        return [], []
    if new is None:
        weakened = [removal_reason(after)]
    elif new.pct >= old.pct and old.holds <= new.holds:  # most changes: no reason to look for, no call
        weakened = []
    else:
        weakened = _weakening(old, new)
    visibility = []
    if old.rua and not (new and new.rua):
        visibility.append("rua_removed")
    if old.ruf and not (new and new.ruf):
        visibility.append("ruf_removed")
    return weakened, visibility
