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
    # id prefix (hex) -> second accepted, oldest first
    entries: Dict[str, int] = field(default_factory=dict)

    def holds(self, event_id: str) -> bool:
        return event_id[:_PREFIX_HEX] in self.entries

    def adding(self, event_ids: Iterable[str], now_s: int, window_s: int) -> DeliveredIndex:
        """This index with ``event_ids`` accepted at ``now_s``, less what is older than the window
        and the oldest beyond ``MAX_IDS``; ``self`` is left unchanged."""
        low = now_s - window_s
        entries = {k: t for k, t in self.entries.items() if t >= low}
        for event_id in event_ids:
            prefix = event_id[:_PREFIX_HEX]
            entries.pop(prefix, None)  # re-accepted: it moves to the newest end
            entries[prefix] = now_s
        excess = len(entries) - MAX_IDS
        if excess > 0:
            entries = dict(list(entries.items())[excess:])
        return DeliveredIndex(entries)

    def to_doc(self) -> Dict[str, Any]:
        packed = b"".join(_ENTRY.pack(bytes.fromhex(k), t) for k, t in self.entries.items())
        return {
            "schema": SCHEMA_VERSION,
            "count": len(self.entries),
            "ids": base64.b64encode(packed).decode(),
        }

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
        if count != len(entries):
            raise StateError(
                f"delivered-ids index at {where} is corrupt (count {count!r}, {len(entries)} ids); {_FIX}"
            )
        return cls(entries)
