"""Groups the events of every stream of a run into the sink's batches. Pure: no clock, no I/O.

Each stream's events keep their order. A batch remembers which records of which stream it holds
(its segments), so that acceptance can be turned into per-stream commits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from ..events import Event
from ..records import AuditRecord
from ..sinks.base import Bounds


@dataclass
class Segment:
    """Consecutive records of one stream inside one batch, oldest first."""

    stream: str
    records: List[AuditRecord] = field(default_factory=list)


@dataclass
class Batch:
    seq: int  # 1, 2, ... in the order batches were closed
    opened_at: float  # caller's clock when its first event arrived (for the linger)
    events: List[Event] = field(default_factory=list)
    segments: List[Segment] = field(default_factory=list)
    size: int = 0  # bytes of bodies, one separator each, as the sinks count them

    def streams(self) -> List[str]:
        return list(dict.fromkeys(s.stream for s in self.segments))


class Batcher:
    """Closes a batch where ``sinks.base.Bounds`` splits, and as soon as it is full by count."""

    def __init__(self, max_events: int, max_bytes: int) -> None:
        self.bounds = Bounds(max(1, max_events), max_bytes)
        self._open: Optional[Batch] = None
        self._seq = 0

    @property
    def opened_at(self) -> Optional[float]:
        """When the open batch got its first event; None when nothing waits."""
        return None if self._open is None else self._open.opened_at

    def add(
        self, stream: str, records: Sequence[AuditRecord], events: Sequence[Event], now: float
    ) -> List[Batch]:
        """Append one stream's events (``records[i]`` became ``events[i]``); returns the batches filled."""
        full: List[Batch] = []
        bounds = self.bounds
        for record, event in zip(records, events):
            n = bounds.size(event.body)
            batch = self._open
            if batch is not None and bounds.closes(len(batch.events), batch.size, n):
                full.append(batch)
                batch = None
            if batch is None:
                self._seq += 1
                batch = self._open = Batch(self._seq, now)
            if not batch.segments or batch.segments[-1].stream != stream:
                batch.segments.append(Segment(stream))
            batch.segments[-1].records.append(record)
            batch.events.append(event)
            batch.size += n
            if bounds.full(len(batch.events)):  # closed now rather than when the next event comes
                full.append(batch)
                self._open = None
        return full

    def cut(self) -> Optional[Batch]:
        """Close the open batch (linger over, or the run is ending)."""
        batch, self._open = self._open, None
        return batch

    def drop(self, stream: str) -> None:
        """Take a failed stream's events out of the open batch: they would only be sent twice."""
        batch = self._open
        if batch is None or all(s.stream != stream for s in batch.segments):
            return
        ids = {r.event_id for s in batch.segments if s.stream == stream for r in s.records}
        batch.segments = [s for s in batch.segments if s.stream != stream]
        batch.events = [e for e in batch.events if e.id not in ids]
        batch.size = sum(Bounds.size(e.body) for e in batch.events)
        if not batch.events:
            self._open = None
