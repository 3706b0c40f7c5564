"""SPF TXT records (RFC 7208): what a record authorizes, and "did this change weaken it?".

A record is recognised by its content: its first term is ``v=spf1`` (any case, the text read as
``tags.unquote`` reads it: quotes removed, split strings joined). For each side: the ``all``
qualifier (``-all`` > ``~all`` > ``?all`` > ``+all``; a record without ``all`` and without
``redirect`` ends as ``?all``, one with a ``redirect`` ends as its target does, which we cannot
know), the ``include:`` and ``redirect=`` targets, and the count of terms that cost a DNS lookup
(``include``, ``a``, ``mx``, ``ptr``, ``exists``, ``redirect``; more than 10 is a permanent error,
so receivers stop checking SPF).

A change is *weakened* for any of these reasons (codes as emitted):

* ``record_removed`` / ``record_invalid``: a valid record is gone, or no longer an SPF record;
* ``all_weakened``: the final qualifier is weaker than before (``-all`` -> ``~all``);
* ``all_pass``: the record now ends in ``+all``: every host on the Internet may send as the domain;
* ``lookup_limit_exceeded``: the record now needs more than 10 DNS lookups (it did not before);
* ``all_redirected``: an explicit ``all`` replaced by a ``redirect=``: the end result is now another
  domain's, whoever controls it;
* ``broad_range``: a passing ``ip4``/``ip6`` range of a /8 (IPv6 /16) or wider now authorizes a
  large part of the Internet (``ip4:0.0.0.0/0`` is ``+all`` under another name).

A change from no record (absent or not SPF) can weaken nothing. Adding an include is ordinary
business and only listed (``targets_added``), never a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import new_tuple
from .memo import text_cache
from .tags import removal_reason, side_fields, unquote

LOOKUP_LIMIT = 10
_STRENGTH = {"-all": 3, "~all": 2, "?all": 1, "+all": 0}
_LOOKUP_MECHANISMS = frozenset({"include", "a", "mx", "ptr", "exists"})


@dataclass(frozen=True)
class SpfRecord:
    """One parsed record. ``all`` is None when a redirect decides the end result."""

    all: Optional[str]
    targets: Tuple[str, ...]  # "include:<domain>" and "redirect=<domain>", in record order
    lookups: int
    broad: bool = False  # a passing ip4 range of /8 or wider, ip6 of /16 or wider

    def fields(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"all": self.all} if self.all else {}
        out["targets"] = list(self.targets)
        out["lookups"] = self.lookups
        if self.broad:
            out["broad"] = True
        return out


_BROADEST = {"ip4": 8, "ip6": 16}  # prefix lengths at or under these authorize too much


def _is_broad(qualifier: str, name: str, mechanism: str) -> bool:
    """A passing ``ip4``/``ip6`` mechanism whose range is a /8 (/16) or wider."""
    limit = _BROADEST.get(name)
    if limit is None or qualifier != "+":
        return False
    _, slash, prefix = mechanism.rpartition("/")
    return bool(slash) and prefix.isdigit() and int(prefix) <= limit


def is_spf(value: object) -> bool:
    """True for a string whose first term is ``v=spf1``."""
    return isinstance(value, str) and parse(value) is not None


# A trail holds each record twice (the after of one change, the before of the next); the result is
# immutable, so it may be shared.
@text_cache(1024)
def parse(text: str) -> Optional[SpfRecord]:
    """The record's qualifier, targets and lookup count; None when it is not an SPF record."""
    terms = unquote(text).split()
    if not terms or terms[0].lower() != "v=spf1":
        return None
    final: Optional[str] = None
    targets: List[str] = []
    lookups = 0
    redirect = broad = False
    for term in terms[1:]:
        lowered = term.lower()
        if lowered.startswith("redirect="):
            redirect = True
            lookups += 1
            targets.append("redirect=" + lowered.partition("=")[2])
            continue
        qualifier = lowered[0] if lowered[:1] in ("+", "-", "~", "?") else "+"
        mechanism = lowered.lstrip("+-~?")
        name = mechanism.split(":", 1)[0].split("/", 1)[0]
        if name in _LOOKUP_MECHANISMS:
            lookups += 1
        elif name in _BROADEST and final is None:
            broad = broad or _is_broad(qualifier, name, mechanism)
        if name == "include":
            targets.append("include:" + mechanism.partition(":")[2])
        elif name == "all" and final is None:
            final = qualifier + "all"  # terms after "all" are never evaluated
    if final is None and not redirect:
        final = "?all"
    return SpfRecord(final, tuple(targets), lookups, broad)


class SpfChange(NamedTuple):  # one per change record: built by new_tuple, without its Python __new__
    before: Optional[SpfRecord]
    after: Optional[SpfRecord]
    targets_added: List[str]
    targets_removed: List[str]
    weakened_reasons: List[str]

    @property
    def weakened(self) -> bool:
        return bool(self.weakened_reasons)

    @property
    def over_lookup_limit(self) -> bool:
        return self.after is not None and self.after.lookups > LOOKUP_LIMIT

    def fields(self, out: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The ``emailauth.audit.spf`` object of an ECS event, written into ``out`` when given (its
        first fields: ``change``)."""
        out = side_fields({} if out is None else out, self.before, self.after)
        out["targets_added"] = self.targets_added
        out["targets_removed"] = self.targets_removed
        out["over_lookup_limit"] = self.over_lookup_limit
        out["weakened"] = bool(self.weakened_reasons)
        out["weakened_reasons"] = self.weakened_reasons
        return out


def analyze(before: Optional[str], after: Optional[str]) -> SpfChange:
    """Compare two TXT values; None, blank or non-SPF text means no SPF record on that side."""
    old = parse(before) if before else None
    new = parse(after) if after else None
    old_targets = old.targets if old else ()
    new_targets = new.targets if new else ()
    if old_targets == new_targets:  # most changes keep the targets: no sets to build
        added, removed = [], []
    else:
        added = sorted(set(new_targets).difference(old_targets))
        removed = sorted(set(old_targets).difference(new_targets))
    if old is None:
        return new_tuple(SpfChange, (old, new, added, removed, []))
    reasons: List[str] = []
    if new is None:
        reasons.append(removal_reason(after))
    else:
        if old.all and new.all and _STRENGTH[new.all] < _STRENGTH[old.all]:
            reasons.append("all_weakened")
        if new.all == "+all" and old.all != "+all":
            reasons.append("all_pass")
        if new.lookups > LOOKUP_LIMIT >= old.lookups:
            reasons.append("lookup_limit_exceeded")
        if old.all is not None and new.all is None:
            reasons.append("all_redirected")
        if new.broad and not old.broad:
            reasons.append("broad_range")
    return new_tuple(SpfChange, (old, new, added, removed, reasons))
