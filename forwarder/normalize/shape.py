"""What a change map's keys decide, whatever their values: the field names (``changes.safe_names``),
the message's list of changes and the keys that hold email addresses. Records of one kind carry the
same keys, so this is derived once per set of keys (cached by them, bounded like every cache here)."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Tuple

from .changes import safe_names
from .memo import text_cache


class Shape(NamedTuple):
    """Shared between records with the same keys: change nothing in it."""

    names: Mapping[Any, str]  # key -> field name
    listed: str  # the field names sorted, comma separated
    email_keys: Tuple[Any, ...]  # the keys whose values are email addresses (related.user)


def _shape(keys: Tuple[Any, ...]) -> Shape:
    names = safe_names(keys)
    emails = []
    for key in keys:
        name = key if key.__class__ is str else str(key)
        if name == "email" or name.endswith("_email"):
            emails.append(key)
    return Shape(names, ", ".join(sorted(names.values())), tuple(emails))


# The ``Shape`` of a change map's keys, ``shape_of(tuple(change_map))``: a Memo's lookup (no Python
# call for a hit), cached when the keys are text, as JSON keys are.
shape_of = text_cache(4096)(_shape)
