"""What a format derives from a record with a plain key (``facts.plain_key``: a login), cached per
options value and found with little more work than the dictionary lookup.

Most of a trail is logins, and per login the lookup is much of what is left to do once the event
itself is cached. The cache holds only keys of strings and nulls (``facts.is_plain``), and no other
JSON value equals one of those, so a record's ``candidate_key`` is looked up before its values are
checked: a hit is a plain key (a list or an object cannot be hashed: no plain key). Only a miss
checks them.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, Optional, Tuple, TypeVar

from ..records import AuditRecord
from .facts import PlainKey, candidate_key, is_plain

V = TypeVar("V")

_NO_OPTIONS = object()  # equal to no options value
_MISSING = object()


class PlainCache(Generic[V]):
    """``fn(plain_key(record), opts)``, cached by the key for one options value at a time (a run has
    one). The options are compared by identity first: hashing them (a dataclass) costs more than the
    lookup. The cache and its options are swapped as one tuple, so that threads never pair one
    options value with another's cache. At most ``maxsize`` keys: a full cache starts again empty."""

    def __init__(self, fn: Callable[[PlainKey, Any], V], maxsize: int) -> None:
        self._fn, self._maxsize = fn, maxsize
        self._current: Tuple[Any, Dict[Any, V]] = (_NO_OPTIONS, {})

    def get(self, record: AuditRecord, opts: Any) -> Optional[V]:
        """The value of the record's plain key, or None when it has none (derive its facts)."""
        key = candidate_key(record)
        if key is None:
            return None
        current_opts, cache = self._current
        try:
            found = cache.get(key, _MISSING) if current_opts is opts else _MISSING
        except TypeError:  # a list or an object among the values: not a plain key
            return None
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        if not is_plain(key):
            return None
        if current_opts is not opts:
            if current_opts != opts:
                cache = {}
            self._current = (opts, cache)
        found = cache.get(key, _MISSING)
        if found is _MISSING:
            found = self._fn(key, opts)
            if len(cache) >= self._maxsize:
                cache.clear()
            cache[key] = found
        return found  # type: ignore[return-value]
