"""Which streams a run starts first: the ones that have waited longest.

A run starts streams in one order and, when its deadline comes, leaves the rest of that order
unstarted: ``report.not_started`` is always a tail of the order. So the order is a rotation of the
planned streams, and the whole schedule is one key, the stream to start first, kept in a small
cursor document beside the state:

* a run that started everything leaves the cursor alone (the same rotation again: whoever went
  first last time has again waited longest), and costs no write;
* a run cut short moves the cursor to its first unstarted stream, so the next run starts with the
  streams it left, then the ones it served, in the order it served them.

The cursor is advice, not state: it only orders work. A lost race on it (two runs at once) is
logged and ignored, an unreadable cursor starts from the top, and delivery stays exactly as safe.
"""

from __future__ import annotations

import logging
from typing import Any, List, Optional, Protocol, Sequence, runtime_checkable

from .errors import StateError
from .report import RunReport
from .state.store import ConditionalSlot
from .streams import Stream

log = logging.getLogger(__name__)

CURSOR_SCHEMA = 1


@runtime_checkable
class HasCursor(Protocol):
    """A store that can keep the run cursor (the S3 and DynamoDB stores)."""

    def cursor_slot(self) -> ConditionalSlot: ...


def rotate(plan: Sequence[Stream], first: Optional[str]) -> List[Stream]:
    """``plan`` starting at the stream keyed ``first``, or at the next key after it when that stream
    is gone from the plan (in key order, wrapping around)."""
    streams = list(plan)
    if not first or not streams:
        return streams
    keys = [s.key for s in streams]
    later = (i for i, key in enumerate(keys) if key > first)
    start = keys.index(first) if first in keys else next(later, 0)
    return streams[start:] + streams[:start]


class RunCursor:
    """Reads the cursor once before a run (``order``) and moves it after one (``save``)."""

    def __init__(self, slot: Optional[ConditionalSlot]) -> None:
        self._slot = slot
        self._first: Optional[str] = None
        self._version: Optional[str] = None

    @classmethod
    def for_store(cls, store: Any) -> RunCursor:
        return cls(store.cursor_slot() if isinstance(store, HasCursor) else None)

    def order(self, plan: Sequence[Stream]) -> List[Stream]:
        if self._slot is not None:
            try:
                doc, self._version = self._slot.read()
            except StateError as exc:
                log.warning("run cursor unreadable: starting from the top", extra={"error": str(exc)})
                doc, self._version = None, None
            first = doc.get("first") if doc and doc.get("schema") == CURSOR_SCHEMA else None
            self._first = first if isinstance(first, str) else None
        return rotate(plan, self._first)

    def save(self, report: RunReport) -> None:
        """Point the cursor at the first stream this run left; no write when it left none."""
        if self._slot is None or not report.not_started or report.not_started[0] == self._first:
            return
        doc = {"schema": CURSOR_SCHEMA, "first": report.not_started[0]}
        try:
            self._version = self._slot.put(doc, self._version)
        except StateError as exc:  # ConflictError included: another run moved it; its word stands
            log.warning("run cursor not saved", extra={"error": str(exc)})
            return
        self._first = report.not_started[0]
