"""Find SPF and DKIM records among a record's changes by their content, whatever the change key is
called, and give their analysis as ``emailauth.audit.spf`` / ``emailauth.audit.dkim`` fields.

A change qualifies when it is a pair whose sides are text or null, or a lone text value (taken as a
record created), and one side is recognised (``spf.is_spf``, ``dkim.is_dkim``). When several
changes qualify, the first by field name is analysed; ``change`` names it. Anything else is left
alone: an unrecognised value is never an error.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from . import dkim, spf
from .changes import TextSides
from .memo import text_cache


@text_cache(1024)  # a trail holds each record twice: the after of one change, the before of the next
def _kinds_of(text: str) -> Tuple[str, ...]:
    """The ``_KINDS`` ``text`` is a record of (seldom any)."""
    return tuple(kind for kind, recognise, _ in _KINDS if recognise(text))


_KINDS: Tuple[Tuple[str, Callable[[object], bool], Callable[[Optional[str], Optional[str]], Any]], ...] = (
    ("spf", spf.is_spf, spf.analyze),
    ("dkim", dkim.is_dkim, dkim.analyze),
)


def fields(texts: Iterable[Tuple[str, TextSides]]) -> Dict[str, Dict[str, Any]]:
    """``{"spf": ..., "dkim": ...}`` for the kinds of record found (often none) among ``texts``, the
    ``(field name, (before, after))`` of the changes that may hold one (``changes.flatten`` lists
    them), each side recognised once. For each kind, the first change by field name holding a
    record of it is analysed (``{"change": <field name>, **analysis fields}``)."""
    found: Dict[str, Tuple[str, TextSides]] = {}
    for name, sides in texts:
        for side in sides:
            for kind in _kinds_of(side) if side else ():
                held = found.get(kind)
                if held is None or name < held[0]:  # the first change by field name
                    found[kind] = (name, sides)
    out: Dict[str, Dict[str, Any]] = {}
    if found:  # seldom: most changes hold no SPF or DKIM record
        for kind, _, analyze in _KINDS:
            held = found.get(kind)
            if held is not None:
                name, sides = held
                out[kind] = analyze(*sides).fields({"change": name})
    return out
