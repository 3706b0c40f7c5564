"""A stream's state kept in one ``ConditionalSlot``: the part every store (local, S3, DynamoDB) shares."""

from __future__ import annotations

from typing import Optional

from ..errors import StateError
from ..logs import quoted
from .model import StreamState
from .store import ConditionalSlot, Loaded


def load_stream(slot: ConditionalSlot, key: str) -> Loaded:
    """The state in ``slot``; a document naming another stream is refused (a mis-mapped key must
    never hand one stream's watermark to another)."""
    doc, version = slot.read()
    if doc is None:
        return Loaded(StreamState(), None)
    owner = doc.get("stream")
    if owner != key:
        raise StateError(f"state at {slot.location} belongs to stream {quoted(owner)}, not {quoted(key)}")
    return Loaded(StreamState.from_doc(doc, slot.location), version)


def stored_key(slot: ConditionalSlot) -> Optional[str]:
    """The stream key the document in ``slot`` names (for a name that cannot be read back:
    ``names.bounded``); None when it is gone (deleted since a listing)."""
    doc, _ = slot.read()
    if doc is None:
        return None
    key = doc.get("stream")
    if not isinstance(key, str):
        raise StateError(f"state {slot.location} does not name its stream")
    return key


def commit_stream(slot: ConditionalSlot, key: str, state: StreamState, version: Optional[str]) -> str:
    return slot.put(state.to_doc(key), version)
