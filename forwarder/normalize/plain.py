"""What a format derives from a record with a plain key (``facts.plain_key``: a login), cached per
options value and found with little more work than the dictionary lookup.

Most of a trail is logins, and per login the lookup is much of what is left to do once the event
itself is cached. The cache holds only keys of strings and nulls (``facts.is_plain``), and no other
JSON value equals one of those, so a record's ``candidate_key`` is looked up before its values are
checked: a hit is a plain key (a list or an object cannot be hashed: no plain key). Only a miss
checks them.

``TextCache`` finds such a value again by the record's canonical text instead, for the records
that differ from one already seen only in created_at (a user's logins): one split and a lookup.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, Optional, Tuple, TypeVar

from ..records import AuditRecord
from .facts import PlainKey, candidate_key, is_plain

K = TypeVar("K")
V = TypeVar("V")

_NO_OPTIONS = object()  # equal to no options value
_MISSING = object()
_MAX_KEPT_TEXT = 8192  # a plain record's strings are short: 1,024 characters, escaped at most 6 bytes each


class _PerOptions(Generic[K, V]):
    """What was derived for one options value at a time (a run has one; each of its passes brings an
    equal copy, its own ingest time not compared), in a dict held with those options as one tuple:
    threads never pair one options value with another's dict. At most ``maxsize`` entries: a full
    dict starts again empty."""

    def __init__(self, maxsize: int) -> None:
        self.current: Tuple[Any, Dict[K, V]] = (_NO_OPTIONS, {})
        self._maxsize = maxsize

    def adopt(self, opts: Any) -> Optional[Dict[K, V]]:
        """The dict kept for options equal to ``opts`` (held with ``opts`` from now on), else None."""
        known, entries = self.current
        if known is not opts:
            if known != opts:
                return None
            self.current = (opts, entries)
        return entries

    def writable(self, opts: Any) -> Dict[K, V]:
        """The dict to add to for ``opts``: the kept one, or a new one in its place when that one is
        another options value's or full."""
        entries = self.adopt(opts)
        if entries is None or len(entries) >= self._maxsize:
            entries = {}
            self.current = (opts, entries)
        return entries


class PlainCache(Generic[V]):
    """``fn(plain_key(record), opts)``, cached by the key per options value (``_PerOptions``). The
    options are compared by identity first: hashing them (a dataclass) costs more than the lookup."""

    def __init__(self, fn: Callable[[PlainKey, Any], V], maxsize: int) -> None:
        self._fn = fn
        self._store: _PerOptions[Any, V] = _PerOptions(maxsize)

    def get(self, record: AuditRecord, opts: Any) -> Optional[V]:
        """The value of the record's plain key, or None when it has none (derive its facts)."""
        key = candidate_key(record)
        if key is None:
            return None
        known, cache = self._store.current
        try:
            found = cache.get(key, _MISSING) if known is opts else _MISSING
        except TypeError:  # a list or an object among the values: not a plain key
            return None
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        if not is_plain(key):
            return None
        cache = self._store.writable(opts)
        found = cache.get(key, _MISSING)
        if found is _MISSING:
            found = cache[key] = self._fn(key, opts)
        return found  # type: ignore[return-value]


class TextCache(Generic[V]):
    """Values put for records with a plain key, found again for any record whose canonical text
    differs only in its created_at (a user's logins) by one ``partition`` and one lookup: cheaper than
    the plain key, which reads the record's fields. Kept by the text before and after created_at and
    the stream type, per options value (``_PerOptions``).

    Why a record found is the one put but for created_at: ``put`` keeps a plain record's text cut
    where its created_at's value starts and ends (a key of the top object). A record found has that
    text with its own created_at in between, which in the canonical form holds no quote or
    backslash: so that is the whole string the text before opens and the text after closes, the
    record's created_at, and every other field is the one put."""

    def __init__(self, maxsize: int) -> None:
        self._store: _PerOptions[Tuple[bytes, bytes, str], V] = _PerOptions(maxsize)

    def get(self, opts: Any, data: bytes, object_type: str, created: bytes) -> Optional[V]:
        """The value for a record's canonical text ``data`` (``serialized``) and stream type;
        ``created``: its created_at in the canonical form (``time_text``), encoded."""
        known, entries = self._store.current
        if known is not opts:
            entries = self._store.adopt(opts)  # type: ignore[assignment]
            if entries is None:
                return None
        # Split at the first place of created_at: ``put`` keeps only texts where that is the value's.
        # One call cutting both sides: under half of what finding the place and slicing there costs.
        before, _, after = data.partition(created)
        return entries.get((before, after, object_type))

    def put(self, record: AuditRecord, opts: Any, parts: Tuple[bytes, bytes], value: V) -> None:
        """Keep ``value`` for ``record`` (its plain key's) and the records differing only in created_at.
        ``parts``: ``around_created_at(record)``."""
        self._store.writable(opts)[(parts[0], parts[1], record.object_type)] = value


def around_created_at(record: AuditRecord) -> Optional[Tuple[bytes, bytes]]:
    """The record's canonical text before and after its created_at, when that is in the canonical
    form (``record.time_text``) and the first place that text appears (so ``TextCache.get`` splits
    there too), and the text short enough to be kept (a plain record's is)."""
    created, data = record.time_text.encode(), record.serialized
    at = data.find(b'"created_at":"' + created + b'"')  # a key: a value's quotes are escaped
    start = at + len('"created_at":"')
    if not created or at < 0 or len(data) > _MAX_KEPT_TEXT or data.find(created) != start:
        return None
    return data[:start], data[start + len(created) :]
