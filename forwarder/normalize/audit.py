"""``emailauth.audit`` of one record: its spec fields, its changes flattened (``changes.py``) and
their analyses (roles, DMARC, SPF, DKIM, security settings), unknown top-level fields under
``extra``. The mapping is documented with the ECS one in ``ecs.py``."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import dmarc, settings, txtrecords
from . import roles as role_analysis
from .changes import TextSides, as_keyword, as_pair, flatten, role_list, safe_names
from .memo import text_cache
from .risk import REASONS, dmarc_reasons, role_reasons, settings_reasons

# The fields of an audit record in the spec; any other goes to extra.
SPEC_FIELDS = frozenset({"action", "filterable_action", "user", "object", "changes", "created_at"})
_DMARC_KEY = "dmarc_txt_record"
Roles = Tuple[List[str], List[str]]


def audit_of(
    raw: Mapping[str, Any],
    head: Mapping[str, Any],
    change_map: Mapping[str, Any],
    names: Mapping[Any, str],
    roles: Optional[Roles],
    self_change: bool,
    reasons: List[str],
) -> Dict[str, Any]:
    """``emailauth.audit`` without risk, created_at a placeholder (None): the record's value takes its
    place when an event is rendered. ``head`` holds its first fields (created_at, object_type, object,
    action, filterable_action), ``names`` is ``safe_names(change_map)``, ``roles`` is
    ``role_names(change_map)``, ``self_change`` whether the record's user is its object
    (``roles.same_user``). The risk reasons of the analyses (``risk.REASONS``) are added to
    ``reasons`` as each is made: the risk need not look for them in the audit again."""
    audit = dict(head)
    if change_map:
        texts: List[Tuple[str, TextSides]] = []
        audit["changes"] = flatten(change_map, names, texts)
        if roles:
            part = audit["roles"] = role_analysis.analyze(*roles, self_change)
            reasons += role_reasons(part)
        found = settings.analyze(change_map, names)
        if found:
            audit["settings"] = found
            reasons += settings_reasons(found)
        analysis = dmarc_fields(change_map) if _DMARC_KEY in change_map else None
        if analysis is None and texts:
            analysis = dmarc_by_content(texts)
        if analysis:
            audit["dmarc"] = analysis
            reasons += dmarc_reasons(analysis)
        if texts:
            for kind, part in txtrecords.fields(texts).items():  # spf, then dkim
                audit[kind] = part
                reasons += REASONS[kind](part)
    else:
        changes = raw.get("changes")
        if changes not in (None, {}):
            audit["changes_value"] = as_keyword(changes)
    if not SPEC_FIELDS.issuperset(raw):
        extra = {key: value for key, value in raw.items() if key not in SPEC_FIELDS}
        audit["extra"] = {name: as_keyword(extra[key]) for key, name in safe_names(extra).items()}
    return audit


def role_names(change_map: Mapping[str, Any]) -> Optional[Roles]:
    """(before, after) role names when ``changes.roles`` is a pair of role lists."""
    pair = as_pair(change_map.get("roles"))
    if not pair:
        return None
    before, after = role_list(pair[0]), role_list(pair[1])
    return (before, after) if before is not None and after is not None else None


def dmarc_fields(change_map: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """``emailauth.audit.dmarc`` of a ``dmarc_txt_record`` change pair (None when it is not one)."""
    pair = as_pair(change_map.get(_DMARC_KEY))
    if not pair:
        return None
    before, after = pair
    if not ((before is None or isinstance(before, str)) and (after is None or isinstance(after, str))):
        return None
    return _dmarc_pair(before, after, {})


def dmarc_by_content(texts: List[Tuple[str, TextSides]]) -> Optional[Dict[str, Any]]:
    """``emailauth.audit.dmarc`` of the first change by field name (``change`` names it) one of whose
    sides is a DMARC record, whatever its key (``dmarc_record_source.update`` and the like): a
    weakened policy is one under any name. None when no change holds one."""
    found = [(name, sides) for name, sides in texts if any(side and _is_dmarc(side) for side in sides)]
    if not found:
        return None
    name, (before, after) = min(found, key=lambda item: item[0])
    return _dmarc_pair(before, after, {"change": name})


def _is_dmarc(text: str) -> bool:
    return text.lstrip()[:8].upper() == "V=DMARC1"


def _dmarc_pair(before: Optional[str], after: Optional[str], out: Dict[str, Any]) -> Dict[str, Any]:
    old_tags, old = _read(before) if before else (None, None)
    new_tags, new = _read(after) if after else (None, None)
    weakened, visibility = dmarc.reasons(old, new, after)
    if old_tags:
        out["before"] = old_tags.copy()  # the cache's: copied
    if new_tags:
        out["after"] = new_tags.copy()
    out["weakened"] = bool(weakened)
    out["weakened_reasons"] = weakened
    out["visibility_reduced"] = bool(visibility)
    out["visibility_reasons"] = visibility
    return out


# A trail holds each DMARC record twice: the after of one change, the before of the next.
@text_cache(1024)
def _read(text: str) -> Tuple[Dict[str, str], Optional[dmarc.Policy]]:
    """A DMARC record's tags under field-safe names (shared: copy them) and its policy."""
    tags, policy = dmarc.read(text)
    return {name: tags[key] for key, name in safe_names(tags).items()}, policy
