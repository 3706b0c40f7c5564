"""Find SPF and DKIM records among a record's changes by their content, whatever the change key is
called, and give their analysis as ``emailauth.audit.spf`` / ``emailauth.audit.dkim`` fields.

A change qualifies when it is a pair whose sides are text or null, or a lone text value (taken as a
record created), and one side is recognised (``spf.is_spf``, ``dkim.is_dkim``). When several
changes qualify, the first by field name is analysed; ``change`` names it. Anything else is left
alone: an unrecognised value is never an error.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from . import dkim, spf
from .changes import as_pair, safe_names

Sides = Tuple[Optional[str], Optional[str]]


def _text_sides(value: Any) -> Optional[Sides]:
    sides = as_pair(value) or (None, value)
    if all(side is None or isinstance(side, str) for side in sides):
        return sides[0], sides[1]
    return None


def _find(change_map: Mapping[str, Any], recognise: Callable[[object], bool]) -> Optional[Tuple[str, Sides]]:
    for key, name in sorted(safe_names(change_map).items(), key=lambda item: item[1]):
        sides = _text_sides(change_map[key])
        if sides and any(recognise(side) for side in sides):
            return name, sides
    return None


def record_fields(
    change_map: Mapping[str, Any],
    recognise: Callable[[object], bool],
    analyze: Callable[[Optional[str], Optional[str]], Any],
) -> Optional[Dict[str, Any]]:
    """``{"change": <field name>, **analysis fields}`` for the first change ``recognise`` accepts."""
    found = _find(change_map, recognise)
    if not found:
        return None
    name, (before, after) = found
    fields: Dict[str, Any] = analyze(before, after).fields()
    return {"change": name, **fields}


def spf_fields(change_map: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    return record_fields(change_map, spf.is_spf, spf.analyze)


def dkim_fields(change_map: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    return record_fields(change_map, dkim.is_dkim, dkim.analyze)
