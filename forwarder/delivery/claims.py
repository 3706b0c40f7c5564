"""Which stream delivers a record that several streams return (DESIGN §2, Overlap).

A domain action is in its actor's user trail and in its domain's; a record may also be in one trail
only, or in a trail it does not belong to (a service is not obliged to be consistent). So any stream
that returns a record may deliver it, and the invariant is:

    no stream's state passes a record that was neither delivered nor recorded as delivered,

where *recorded as delivered* means: in the tenant-wide index of delivered ids (state/delivered.py),
which holds only ids of batches the sink accepted. How each part keeps it:

* In a run, the first stream to queue a record claims it (``claim``): only that stream ships it in
  this run (the stream polled first, usually the actor's user stream), every other stream skips it
  (``keeps``, while it selects; ``claim``, had it selected it meanwhile), as it skips what the index
  holds (delivered by an earlier run). A claim is held until the index holds the record, so memory
  follows the records in flight, not the run's.
* An accepted batch's ids are written to the index (``record``) before any stream state covering
  them is committed: a crash in between leaves the next run finding them delivered. A batch whose
  index write fails is treated as refused (its records go again next run, same ids).
* A stream that skipped a copy takes its id into its state (``settled``) in its last commit of the
  run, if the index holds it by then (else a later run does, finding it in the index). Until then
  the copy caps the stream's watermark at the copy's time plus the tie margin
  (``FORWARDER_TIE_MARGIN``), so when the claim comes to nothing (a refused batch, a pass cut by its
  cap, a stop, a failed stream) the record stays new to this stream as to the claimer, and its next
  poll, which reads from the watermark minus the tie margin (or, from a watermark held below the
  records delivered, the whole look-back window), reads it again. A copy moves the watermark itself
  only in the stream's last commit of a run in which the stream read its whole trail
  (``read_whole``): then nothing the stream has not handled lies behind it.
* Across runs the index keeps ids for the look-back window: a stream polled within that window
  of another stream's delivery skips the copy; one polled later may deliver a second copy (same
  event id, which idempotent sinks absorb), never lose one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Collection, Dict, List, Optional, Sequence, Set

from ..errors import StateError
from ..records import AuditRecord
from ..state.delivered import SLOT, DeliveredIndex
from ..state.store import ConditionalSlot, StateStore
from ..streams import Stream


@dataclass(frozen=True)
class Settled:
    """What a stream's next commit takes from the copies it skipped."""

    recorded: Dict[str, int] = field(default_factory=dict)  # ids now in the index -> created_at
    ceiling_us: Optional[int] = None  # the watermark stays at or below it (copies not yet recorded)
    moves: bool = False  # the recorded copies may move the watermark


class Claims:
    """The run's claims and the tenant's index; safe from any thread."""

    def __init__(
        self,
        slot: ConditionalSlot,
        window_s: int,
        tie_margin_s: int,
        index: Optional[DeliveredIndex] = None,
        version: Optional[str] = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._slot = slot
        self._window_s = window_s
        self._tie_us = tie_margin_s * 1_000_000
        self._index = index or DeliveredIndex()
        self._version = version
        self._clock = clock
        self._lock = threading.Lock()  # everything below; never held across I/O
        # event id -> key of the stream that claimed it in this run, until the index holds it
        self._holder: Dict[str, str] = {}
        self._skipped: Dict[str, Dict[str, int]] = {}  # stream key -> copies it skipped -> created_at
        self._whole: Set[str] = set()  # streams that read their whole trail in this run
        self._unwritten: Set[str] = set()  # accepted ids waiting for an index write
        self._writing = threading.Lock()  # one index write at a time; the others wait for it
        self._broken: Optional[str] = None  # an index write failed: the run writes no more

    @classmethod
    def load(
        cls, store: StateStore, window_s: int, tie_margin_s: int, clock: Callable[[], float] = time.time
    ) -> Claims:
        """The tenant's index from ``store`` (ids kept ``window_s``; ``tie_margin_s``: how far a
        stream's poll reads back from its watermark); StateError naming the location if unreadable."""
        slot = store.slot(SLOT)
        doc, version = slot.read()
        index = None if doc is None else DeliveredIndex.from_doc(doc, slot.location)
        return cls(slot, window_s, tie_margin_s, index, version, clock)

    def keeps(self, stream: Stream, record: AuditRecord) -> bool:
        """Whether ``stream`` may select ``record``, a record new to its state: not if the index
        holds it or another stream claimed it."""
        with self._lock:
            return self._free(stream.key, record)

    def claim(self, stream_key: str, records: Sequence[AuditRecord]) -> List[int]:
        """``stream_key`` is about to queue ``records``: the places of those it ships (claimed now,
        or by itself before); the others were claimed by another stream meanwhile, or delivered."""
        with self._lock:
            mine = []
            for place, record in enumerate(records):
                if self._free(stream_key, record):
                    self._holder[record.event_id] = stream_key
                    mine.append(place)
            return mine

    def _free(self, stream_key: str, record: AuditRecord) -> bool:
        """Caller holds the lock. A copy that is not is remembered as skipped by the stream."""
        holder = self._holder.get(record.event_id, stream_key)
        if holder == stream_key and not self._index.holds(record.event_id):
            return True
        self._skipped.setdefault(stream_key, {})[record.event_id] = record.ts_us
        return False

    def delivered(self, event_id: str) -> bool:
        """The index holds ``event_id``: an earlier batch delivered it."""
        with self._lock:
            return self._index.holds(event_id)

    def waiting(self, stream_key: str) -> bool:
        """``stream_key`` skipped copies its state has yet to take."""
        with self._lock:
            return bool(self._skipped.get(stream_key))

    def read_whole(self, stream_key: str) -> None:
        """``stream_key`` has read its whole trail in this run (its last pass was complete)."""
        with self._lock:
            self._whole.add(stream_key)

    def settled(self, stream_key: str, last: bool) -> Settled:
        """What the next commit of ``stream_key`` takes; ``last``: nothing of the stream is queued
        or waits to commit after it. The recorded ids are handed out once."""
        with self._lock:
            skipped = self._skipped.get(stream_key)
            if not skipped:
                return Settled()
            recorded = {i: ts for i, ts in skipped.items() if self._index.holds(i)} if last else {}
            for event_id in recorded:
                del skipped[event_id]
            ceiling = min(skipped.values()) + self._tie_us if skipped else None
            return Settled(recorded, ceiling, last and stream_key in self._whole)

    def record(self, event_ids: Collection[str]) -> None:
        """The sink accepted these events: returns once the index holds them. Concurrent callers
        share one write. StateError if it cannot be written (then no later call writes either)."""
        wanted = set(event_ids)
        with self._lock:
            self._unwritten |= wanted
        with self._writing:
            with self._lock:
                if self._broken is not None:
                    raise StateError(self._broken)
                if all(self._index.holds(i) for i in wanted):
                    return  # an earlier write took them
                taken, self._unwritten = self._unwritten, set()
                index = self._index.adding(taken, int(self._clock()), self._window_s)
                version = self._version
            try:
                version = self._slot.put(index.to_doc(), version)
            except StateError as exc:
                with self._lock:
                    self._broken = f"the delivered-ids index at {self._slot.location} was not saved: {exc}"
                    raise StateError(self._broken) from None
            with self._lock:
                self._index, self._version = index, version
                for event_id in taken:  # the index answers for them now: memory stays bounded
                    self._holder.pop(event_id, None)
