"""The tenant-wide index of delivered event ids (DESIGN §2, Overlap), as the state store keeps it.

One document per tenant namespace, beside the stream states (``slot(SLOT)`` of every store; the
fan-out gives a tenant one worker at a time, so one writer). It holds the ids of the events the sink
accepted during the last look-back window, by when they were accepted, and at most ``MAX_IDS`` of
them (the newest). It is only ever asked "was this record delivered?" and holds only ids the sink
accepted, so forgetting an id early can let a second copy through (same event id), never lose one.

Compact, for DynamoDB's 400 KB item: an entry is the first 12 bytes of the event id (96 bits: two
records of one window share them with a probability far below any hardware fault's) and the second
it was accepted, 16 bytes packed, base64 in the document: ``MAX_IDS`` entries take 256 KB.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable

from ..errors import StateError

SLOT = "delivered-ids"
SCHEMA_VERSION = 1
MAX_IDS = 12_000
_PREFIX_HEX = 24  # 12 bytes
_ENTRY = struct.Struct(">12sI")  # id prefix, second accepted
_FIX = "repair or remove it (the next runs may then deliver a second copy of recent records)"


@dataclass(frozen=True)
class DeliveredIndex:
    entries: Dict[str, int] = field(default_factory=dict)  # id prefix (hex) -> second accepted
    packed: bytes = b""  # the same entries packed, oldest first: a write costs no repacking

    def holds(self, event_id: str) -> bool:
        return event_id[:_PREFIX_HEX] in self.entries

    def adding(self, event_ids: Iterable[str], now_s: int, window_s: int) -> DeliveredIndex:
        """This index with ``event_ids`` accepted at ``now_s``, less what is older than the window
        and the oldest beyond ``MAX_IDS``; ``self`` is left unchanged. An id held already keeps its
        first time (a batch sent again in one run: it may leave a little early, never late)."""
        entries = dict(self.entries)
        added = []
        for event_id in event_ids:
            prefix = event_id[:_PREFIX_HEX]
            if prefix not in entries:
                entries[prefix] = now_s
                added.append(_ENTRY.pack(bytes.fromhex(prefix), now_s))
        packed = self.packed + b"".join(added)
        excess, low = len(entries) - MAX_IDS, now_s - window_s
        drop = 0
        for accepted in entries.values():  # oldest first: what goes is at the front
            if drop >= excess and accepted >= low:
                break
            drop += 1
        for prefix in list(itertools.islice(entries, drop)):
            del entries[prefix]
        return DeliveredIndex(entries, packed[drop * _ENTRY.size :])

    def to_doc(self) -> Dict[str, Any]:
        ids = base64.b64encode(self.packed).decode()
        return {"schema": SCHEMA_VERSION, "count": len(self.entries), "ids": ids}

    @classmethod
    def from_doc(cls, doc: Any, where: str) -> DeliveredIndex:
        """Parse a stored document; ``where`` names the location in any error."""
        if not isinstance(doc, dict):
            raise StateError(f"delivered-ids index at {where} is not a JSON object; {_FIX}")
        if doc.get("schema") != SCHEMA_VERSION:
            raise StateError(
                f"delivered-ids index at {where} has schema version {doc.get('schema')!r}; this "
                f"forwarder reads version {SCHEMA_VERSION} (upgrade the forwarder, or {_FIX})"
            )
        try:
            packed = base64.b64decode(doc["ids"], validate=True)
            entries = {p.hex(): t for p, t in _ENTRY.iter_unpack(packed)}
            count = doc["count"]
        except (KeyError, TypeError, ValueError, binascii.Error, struct.error) as exc:
            raise StateError(f"delivered-ids index at {where} is corrupt ({exc}); {_FIX}") from None
        if not count == len(entries) == len(packed) // _ENTRY.size:
            raise StateError(
                f"delivered-ids index at {where} is corrupt (count {count!r}, "
                f"{len(packed) // _ENTRY.size} ids, {len(entries)} different); {_FIX}"
            )
        return cls(entries, packed)
