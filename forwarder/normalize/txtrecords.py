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


def _present(values: Dict[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def spf_fields(change_map: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    found = _find(change_map, spf.is_spf)
    if not found:
        return None
    name, (before, after) = found
    result = spf.analyze(before, after)
    out: Dict[str, Any] = {"change": name}
    for side, record in (("before", result.before), ("after", result.after)):
        if record:
            out[side] = _present(
                {"all": record.all, "targets": list(record.targets), "lookups": record.lookups}
            )
    out["targets_added"] = result.targets_added
    out["targets_removed"] = result.targets_removed
    out["over_lookup_limit"] = result.over_lookup_limit
    out["weakened"] = result.weakened
    out["weakened_reasons"] = result.weakened_reasons
    return out


def dkim_fields(change_map: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    found = _find(change_map, dkim.is_dkim)
    if not found:
        return None
    name, (before, after) = found
    result = dkim.analyze(before, after)
    out: Dict[str, Any] = {"change": name}
    for side, key in (("before", result.before), ("after", result.after)):
        if key:
            out[side] = _present(
                {
                    "key_type": key.key_type,
                    "key_bits": key.key_bits,
                    "testing": key.testing,
                    "revoked": key.revoked,
                }
            )
    out["revoked"] = result.revoked
    out["removed"] = result.removed
    out["weakened"] = result.weakened
    out["weakened_reasons"] = result.weakened_reasons
    return out
