"""What a format derives from a record with a plain key (``facts.plain_key``: a login), cached per
options value and found with little more work than the dictionary lookup.

Most of a trail is logins, and per login the lookup is much of what is left to do once the event
itself is cached. The cache holds only keys of strings and nulls (``facts.is_plain``), and no other
JSON value equals one of those, so a record's ``candidate_key`` is looked up before its values are
checked: a hit is a plain key (a list or an object cannot be hashed: no plain key). Only a miss
checks them.

``TextCache`` finds such a value again by the record's canonical text instead, for the records
that differ from one already seen only in created_at (a user's logins): a slice and a lookup.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, NamedTuple, Optional, Tuple, TypeVar

from ..records import AuditRecord
from .facts import PlainKey, candidate_key, is_plain

V = TypeVar("V")

_NO_OPTIONS = object()  # equal to no options value
_MISSING = object()
_MAX_KEPT_TEXT = 8192  # a plain record's strings are short: 1,024 characters, escaped at most 6 bytes each


class PlainCache(Generic[V]):
    """``fn(plain_key(record), opts)``, cached by the key for one options value at a time (a run has
    one; each pass brings an equal copy, its own ingest time not compared). The options are compared
    by identity first: hashing them (a dataclass) costs more than the lookup; an equal copy is then
    adopted with the cache. The cache and its options are swapped as one tuple, so that threads never
    pair one options value with another's cache. At most ``maxsize`` keys: a full cache starts again
    empty."""

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


class _Known(NamedTuple):
    """A value, and the records it is right for: of stream type ``stream``, with a canonical text
    of ``length`` bytes that is ``prefix``, a created_at in the canonical form, then the key."""

    prefix: bytes
    length: int
    stream: str
    value: Any


class TextCache(Generic[V]):
    """Values put for records with a plain key, found again for any record whose canonical text
    differs only in its created_at (a user's logins) by one slice and one lookup: cheaper than the
    plain key, which reads the record's fields. Per options value and bounded, as PlainCache."""

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._current: Tuple[Any, Dict[bytes, _Known]] = (_NO_OPTIONS, {})

    def get(self, record: AuditRecord, opts: Any, created: bytes) -> Optional[V]:
        """``created``: the record's created_at in the canonical form (``time_text``), encoded."""
        known, entries = self._current
        if known is not opts:  # another pass's equal options are adopted, as in PlainCache
            if known != opts:
                return None
            self._current = (opts, entries)
        data = record.serialized
        # What follows the first place of created_at: the key when that place is the value's. The
        # length and the prefix then prove that data is the prefix, created_at, the key.
        found = entries.get(data[data.find(created) + len(created) :])
        if (
            found is not None
            and len(data) == found.length
            and data.startswith(found.prefix)
            and record.object_type == found.stream
        ):
            return found.value
        return None

    def put(self, record: AuditRecord, opts: Any, value: V) -> None:
        """Keep ``value`` for ``record`` (its plain key's) and the records differing only in created_at."""
        parts = around_created_at(record)
        if parts is None:
            return
        prefix, suffix = parts
        known, entries = self._current
        if known != opts or len(entries) >= self._maxsize:
            entries = {}
        self._current = (opts, entries)  # swapped as one, as in PlainCache
        entries[suffix] = _Known(prefix, len(record.serialized), record.object_type, value)


def around_created_at(record: AuditRecord) -> Optional[Tuple[bytes, bytes]]:
    """The record's canonical text before and after its created_at when that is in the canonical
    form (``record.time_text``), and the text short enough to be kept (a plain record's is)."""
    created, data = record.time_text, record.serialized
    at = data.find(b'"created_at":"' + created.encode() + b'"')  # a key: a value's quotes are escaped
    if not created or at < 0 or len(data) > _MAX_KEPT_TEXT:
        return None
    start = at + len('"created_at":"')
    return data[:start], data[start + len(created) :]
