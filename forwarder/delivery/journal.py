"""The objects a batch is being written as, kept until their events are recorded as delivered:
exactly once for sinks that write a batch as several objects (Security Lake: one per class and day).

Such a sink names each object by its events (a digest of their ids), so the same events sent again
overwrite their object. But a batch cut in the middle (a killed process, a refused batch with some
objects written) leaves objects whose events the delivered-ids index (claims.py) does not hold; the
next run batches those events with others, under other names, and their rows land twice.

So, before a batch's first write, the keys of its objects are added to this journal, one document of
the state store beside the index (``slot(SLOT)``, compare-and-swap); they leave it once the index
holds the batch's ids. The next run, before it sends anything (``Journal.open``), asks the sink which
events each journaled object holds (``sink.held_by(key)``: read back from the destination, None when
the object was never written), records those as delivered, then empties the journal: the streams
skip them as delivered by an earlier run, and the events of objects never written go again.

Bounded: at most ``MAX_CHARS`` characters of keys, within DynamoDB's 400 KB item (a Security Lake key
is about 150: some 1,600 objects, a few batches of a long backfill); a batch that would pass it is
refused, and its streams go again next run, once the recovery has emptied the journal.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Collection, List, Optional, Protocol, Sequence, Set, runtime_checkable

from ..errors import StateError
from ..events import Event
from ..state.store import ConditionalSlot, StateStore
from .claims import Claims

log = logging.getLogger(__name__)

SLOT = "pending-objects"
SCHEMA_VERSION = 1
MAX_CHARS = 240_000
_FIX = "repair or remove it (the objects it names may then hold rows a later run writes again)"


@runtime_checkable
class Journaled(Protocol):
    """A sink whose batch becomes several objects, each named by its events."""

    def object_keys(self, batch: Sequence[Event]) -> List[str]:
        """The keys ``send(batch)`` writes, computed without writing."""
        ...

    def held_by(self, key: str) -> Optional[List[str]]:
        """The ids of the events the object ``key`` holds, read from the destination; None if there
        is no such object (or it does not hold what its key says). SinkError when it cannot tell."""
        ...


class Journal:
    """The run's journal of pending objects; safe from any thread."""

    def __init__(self, slot: ConditionalSlot, sink: Journaled) -> None:
        self._slot = slot
        self._sink = sink
        self._version: Optional[str] = None
        self._keys: Set[str] = set()
        self._lock = threading.Lock()  # one write at a time, and _keys/_version/_broken
        self._broken: Optional[str] = None

    @classmethod
    def open(cls, store: StateStore, sink: Any, claims: Claims) -> Optional[Journal]:
        """None for a sink that writes a batch as one request. Otherwise the journal, emptied: the
        events of the objects an earlier run left in it are recorded as delivered first."""
        if not isinstance(sink, Journaled):
            return None
        slot = store.slot(SLOT)
        doc, version = slot.read()
        if doc is None or version is None:
            return cls(slot, sink)
        keys = _keys_of(doc, slot.location)
        held: List[str] = []
        found = 0  # objects written
        for key in keys:
            ids = sink.held_by(key)
            if ids is not None:
                held.extend(ids)
                found += 1
        if held:
            claims.record(held)
        log.info(
            "pending objects of an earlier run recovered",
            extra={"objects": len(keys), "written": found, "events": len(held)},
        )
        slot.delete(version)
        return cls(slot, sink)

    def begin(self, batch: Sequence[Event]) -> List[str]:
        """Add the keys of ``batch``'s objects before the first is written, and return them.
        StateError if the journal is full or was not saved: the batch must not be sent."""
        keys = self._sink.object_keys(batch)
        with self._lock:
            self._check()
            wanted = self._keys | set(keys)
            if sum(len(key) for key in wanted) > MAX_CHARS:
                raise StateError(
                    f"the pending-objects journal at {self._slot.location} is full ({len(self._keys)} "
                    "objects of batches not confirmed); the next run recovers them"
                )
            self._write(wanted)
        return keys

    def end(self, keys: Collection[str]) -> None:
        """The events of ``keys`` are recorded as delivered: they leave the journal. A failure leaves
        them in it (the next run records them again, which changes nothing) and refuses later batches."""
        with self._lock:
            self._check()
            self._write(self._keys - set(keys))

    def _check(self) -> None:
        if self._broken is not None:
            raise StateError(self._broken)

    def _write(self, keys: Set[str]) -> None:
        try:
            if keys:
                self._version = self._slot.put(_doc(keys), self._version)
            elif self._version is not None:  # empty: removed, so a run that sends nothing reads nothing
                self._slot.delete(self._version)
                self._version = None
        except StateError as exc:
            self._broken = f"the pending-objects journal at {self._slot.location} was not saved: {exc}"
            raise StateError(self._broken) from None
        self._keys = keys


def _doc(keys: Set[str]) -> dict:
    return {"schema": SCHEMA_VERSION, "keys": sorted(keys)}


def _keys_of(doc: Any, where: str) -> List[str]:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_VERSION:
        raise StateError(
            f"pending-objects journal at {where} is not a version {SCHEMA_VERSION} journal; {_FIX}"
        )
    keys = doc.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, str) and 0 < len(k) <= 1024 for k in keys):
        raise StateError(f"pending-objects journal at {where} is corrupt (its keys); {_FIX}")
    if sum(len(key) for key in keys) > MAX_CHARS:
        raise StateError(f"pending-objects journal at {where} is larger than {MAX_CHARS} characters; {_FIX}")
    return keys
