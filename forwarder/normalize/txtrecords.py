"""Find SPF and DKIM records among a record's changes by their content, whatever the change key is
called, and give their analysis as ``emailauth.audit.spf`` / ``emailauth.audit.dkim`` fields.

A change qualifies when it is a pair whose sides are text or null, or a lone text value (taken as a
record created), and one side is recognised (``spf.is_spf``, ``dkim.is_dkim``). When several
changes qualify, the first by field name is analysed; ``change`` names it. Anything else is left
alone: an unrecognised value is never an error.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import dkim, spf
from .changes import as_pair, safe_names
from .memo import text_cache

Sides = Tuple[Optional[str], Optional[str]]
Candidates = List[Tuple[str, Sides]]


def _text_sides(value: Any) -> Optional[Sides]:
    sides = as_pair(value) or (None, value)
    if all(side is None or isinstance(side, str) for side in sides):
        return sides[0], sides[1]
    return None


def _candidates(change_map: Mapping[str, Any], names: Optional[Mapping[Any, str]] = None) -> Candidates:
    """(field name, sides) of the changes that could hold a record, by field name. Both kinds are
    tag lists (``v=spf1 ...``, ``v=DKIM1; p=...``): a change without ``=`` in its text holds
    neither, which rules out nearly every change with one cheap scan and no name to compute."""
    found = [key for key, value in change_map.items() if _has_tag_text(value)]
    if not found:
        return []
    if names is None:
        names = safe_names(change_map)  # names depend on every key, not only the candidates'
    out: Candidates = []
    for key in found:
        sides = _text_sides(change_map[key])
        if sides:
            out.append((names[key], sides))
    return sorted(out, key=lambda item: item[0])


def _has_tag_text(value: Any) -> bool:
    """Text holding "=", alone or as a side of a pair (spelled out: it runs on every change)."""
    if isinstance(value, str):
        return "=" in value
    if isinstance(value, list) and len(value) == 2:
        before, after = value
        return (isinstance(before, str) and "=" in before) or (isinstance(after, str) and "=" in after)
    return False


@text_cache(1024)  # a trail holds each record twice: the after of one change, the before of the next
def _recognised(text: str) -> Tuple[bool, ...]:
    """For each of ``_KINDS``, whether ``text`` is a record of that kind."""
    return tuple(recognise(text) for _, recognise, _ in _KINDS)


_KINDS: Tuple[Tuple[str, Callable[[object], bool], Callable[[Optional[str], Optional[str]], Any]], ...] = (
    ("spf", spf.is_spf, spf.analyze),
    ("dkim", dkim.is_dkim, dkim.analyze),
)


def fields(change_map: Mapping[str, Any], names: Mapping[Any, str]) -> Dict[str, Dict[str, Any]]:
    """``{"spf": ..., "dkim": ...}`` for the kinds of record found (often none): the changes are
    scanned once for both, each side recognised once. For each kind, the first change by field name
    holding a record of it is analysed (``{"change": <field name>, **analysis fields}``).
    ``names`` is ``safe_names(change_map)``."""
    found: Dict[str, Dict[str, Any]] = {}
    for name, sides in _candidates(change_map, names):
        marks = [_recognised(side) for side in sides if side]
        for n, (kind, _, analyze) in enumerate(_KINDS):
            if kind not in found and any(mark[n] for mark in marks):
                found[kind] = {"change": name, **analyze(*sides).fields()}
    return {kind: found[kind] for kind, _, _ in _KINDS if kind in found}
