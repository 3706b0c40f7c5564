"""Which stream states may be committed, given which batches the sink accepted. Pure bookkeeping:
the caller holds the lock and does the store I/O.

The rule: a stream's state moves over its records up to record k only once every batch holding its
records up to k was accepted, and its commits are made one at a time, in order. A refused batch, a
failed commit or a run that ends before its batches were confirmed fails the streams concerned from
their first unconfirmed record on: their state stays where it was last committed, so the next run
selects those records again (same event ids).

The ids of unplaceable records already written to quarantine are carried, never written on their own
while the stream has a commit to come: they join the state in its next commit or, when nothing of it
waits to commit once the run has queued everything, in the stream's last commit of the run (an idle
stream carries none, so nothing is written for it).

Copies of records that another stream claimed or delivered (claims.py) are settled the same way: a
stream's commits keep its watermark under the ceiling of the copies not yet recorded as delivered,
and the recorded ones join its state in its last commit of the run.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Mapping, Optional, Set, Tuple

from ..records import AuditRecord
from ..state.model import FUTURE_SKEW_US, StreamState
from ..timeutil import now_us
from .batcher import Batch, Segment
from .claims import Claims, Settled


@dataclass
class Commit:
    """A state to write for ``stream`` over the version last written (compare-and-swap)."""

    stream: str
    state: StreamState
    version: Optional[str]
    segments: List[int] = field(default_factory=list)  # ids of the segments it covers


@dataclass
class _Entry:
    segment: Segment
    accepted: bool = False


@dataclass
class _Book:
    state: StreamState  # last committed (or loaded)
    version: Optional[str]
    pending: Deque[_Entry] = field(default_factory=deque)  # closed batches' segments, in order
    failed: Optional[str] = None
    committing: bool = False
    carried: Dict[str, int] = field(default_factory=dict)  # quarantined ids (-> when) for the next commit
    ended: bool = False  # nothing more of the stream will be queued in this run


class CommitTracker:
    def __init__(self, window_us: int, claims: Optional[Claims] = None) -> None:
        self.window_us = window_us
        self._claims = claims  # None: no stream skips a copy
        self._books: Dict[str, _Book] = {}
        self._entries: Dict[int, _Entry] = {}  # id(segment) -> its entry, while pending
        self._writing: Set[int] = set()  # ids of the segments whose commit is being written
        self._commits = 0  # commits being written (some cover no segment)
        self._ended = False  # nothing more will be queued in this run

    def open(self, stream: str, state: StreamState, version: Optional[str]) -> None:
        """Start tracking ``stream`` at its loaded state (later calls keep the tracked one)."""
        if stream not in self._books:
            self._books[stream] = _Book(state, version)

    def failure(self, stream: str) -> Optional[str]:
        book = self._books.get(stream)
        return None if book is None else book.failed

    def position(self, stream: str) -> Optional[Tuple[StreamState, Optional[str]]]:
        """The state last committed and its version; None for a stream never queued."""
        book = self._books.get(stream)
        return None if book is None else (book.state, book.version)

    def unsettled(self) -> bool:
        return bool(self._entries or self._commits)

    def settled(self, batch: Batch) -> bool:
        """Every segment of ``batch`` is committed, or dropped with its failed stream."""
        return all(id(s) not in self._entries and id(s) not in self._writing for s in batch.segments)

    def closed(self, batch: Batch) -> None:
        """``batch`` will be sent: its segments now wait for its outcome."""
        for segment in batch.segments:
            book = self._books[segment.stream]
            if book.failed is None:
                entry = _Entry(segment)
                book.pending.append(entry)
                self._entries[id(segment)] = entry

    def carry(self, stream: str, quarantined: Mapping[str, int]) -> None:
        """Unplaceable records of ``stream`` were written to quarantine: their ids (-> when) join its
        state in its next commit (none is made for them until the stream ``end``s)."""
        book = self._books[stream]
        if book.failed is None:
            book.carried.update(quarantined)

    def end(self) -> List[Commit]:
        """Nothing more will be queued in this run: the last commits of streams that carry ids with
        nothing else left to commit."""
        self._ended = True
        for book in self._books.values():
            book.ended = True
        return [c for c in (self._due(s) for s in self._books) if c is not None]

    def accepted(self, batch: Batch) -> List[Commit]:
        """The sink accepted ``batch`` (and its ids are recorded as delivered): the commits that
        became due, including, once the run has queued everything, the last commits of streams that
        skipped copies of its records."""
        for segment in batch.segments:
            entry = self._entries.get(id(segment))
            if entry is not None:
                entry.accepted = True
        streams = batch.streams()
        if self._ended and self._claims is not None:
            inside = set(streams)
            streams += [s for s in self._books if s not in inside and self._claims.waiting(s)]
        return [c for c in (self._due(s) for s in streams) if c is not None]

    def refused(self, batch: Batch, reason: str) -> List[str]:
        """The sink refused ``batch``: the streams that fail now. Their records in earlier batches
        still commit once accepted; nothing from their first record in ``batch`` on does."""
        inside = {id(segment) for segment in batch.segments}
        return [s for s in batch.streams() if self._fail(s, reason, inside)]

    def committed(self, commit: Commit, version: str) -> Optional[Commit]:
        """``commit`` was written; the next one for its stream, if due."""
        book = self._books[commit.stream]
        book.state, book.version = commit.state, version
        self._written(commit)
        return self._due(commit.stream)

    def commit_failed(self, commit: Commit, reason: str) -> bool:
        self._written(commit)
        return self._fail(commit.stream, reason)

    def _written(self, commit: Commit) -> None:
        self._books[commit.stream].committing = False
        self._writing.difference_update(commit.segments)
        self._commits -= 1

    def abandon(self, reason: str) -> List[str]:
        """The run ends with batches unconfirmed: the streams that had records in them fail."""
        waiting = [s for s, b in self._books.items() if b.pending and b.failed is None]
        return [s for s in waiting if self._fail(s, reason)]

    def _due(self, stream: str) -> Optional[Commit]:
        book = self._books[stream]
        if book.committing:  # a failed stream's pending entries all precede its failure
            return None
        records: List[AuditRecord] = []
        covered: List[int] = []
        while book.pending and book.pending[0].accepted:
            entry = book.pending.popleft()
            del self._entries[id(entry.segment)]
            records.extend(entry.segment.records)
            covered.append(id(entry.segment))
        last = book.ended and not book.pending and book.failed is None
        copies = self._settled(stream, last)
        if not covered and not (last and (book.carried or copies.recorded)):
            return None
        book.committing = True
        self._writing.update(covered)
        self._commits += 1
        quarantined, book.carried = book.carried, {}
        state = book.state.advance(
            records,
            self.window_us,
            now_us() + FUTURE_SKEW_US,
            quarantined,
            copies.recorded,
            recorded_move=copies.moves,
            held_us=copies.ceiling_us,
        )
        return Commit(stream, state, book.version, covered)

    def _settled(self, stream: str, last: bool) -> Settled:
        return Settled() if self._claims is None else self._claims.settled(stream, last)

    def _fail(self, stream: str, reason: str, from_segments: Optional[Set[int]] = None) -> bool:
        """Mark ``stream`` failed with ``reason``, dropping its pending entries from the first one in
        ``from_segments`` on (all of them without it); False if it had failed already."""
        book = self._books[stream]
        pending = list(book.pending)
        cut = 0
        if from_segments is not None:
            cut = next((i for i, e in enumerate(pending) if id(e.segment) in from_segments), len(pending))
        for entry in pending[cut:]:
            del self._entries[id(entry.segment)]
        book.pending = deque(pending[:cut])
        book.carried = {}  # quarantined again next run, as its records after the failure are sent again
        if book.failed is not None:
            return False
        book.failed = reason
        return True
