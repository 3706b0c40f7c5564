"""Which records a pass takes from the pages it reads (the oldest new ones, up to a cap). Pure: the
pages, the state and the limits come in, feedback for the source goes out after each page; nothing is
fetched or stored here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..records import AuditRecord, InvalidRecord, parse_record
from ..state.model import StreamState
from ..streams import Stream
from .pages import Feedback, Page


@dataclass(frozen=True)
class Limits:
    """A stream's first run reads back ``initial_lookback_s``; a later one reads from the watermark
    minus ``tie_margin_s`` (records sharing its second, or just late) and remembers delivered ids
    ``window_s`` behind it; a pass holds at most ``max_records_per_pass`` new records."""

    initial_lookback_s: int
    window_s: int
    max_records_per_pass: int
    tie_margin_s: int = 5


@dataclass
class Selection:
    records: List[AuditRecord]  # oldest first
    complete: bool  # every new record seen fits in ``records``
    resume_offset: int = 0  # oldest-first pages: the first one that may hold a record left unshipped
    fetched: int = 0  # records read
    skipped: int = 0  # records read that were not new (or another stream's)
    late: int = 0  # selected records older than the watermark: they reached the API late
    unplaceable: List[Tuple[Any, str]] = field(default_factory=list)  # (raw record, why)


# Records read in order (with a rise) before an oldest-first claim is believed enough to stop a
# pass early: a service that ignores sort cannot pass that by chance.
_ORDER_EVIDENCE = 20


class Selector:
    """Keeps the oldest ``max_records_per_pass`` new records of the pages it is given.

    Memory stays bounded by twice that number whatever the backlog: past it, the newest are
    dropped from memory and the next pass picks them up. Once the cap is held, the feedback says
    ``enough`` where every record still unread is known to be newer (oldest-first pages, or the
    end of a time window). Records that cannot be parsed are set aside (``unplaceable``), not in
    the way: the caller quarantines them.
    """

    def __init__(
        self,
        stream: Stream,
        state: StreamState,
        *,
        floor_us: int,
        limits: Limits,
        keeps: Callable[[Stream, AuditRecord], bool],
    ) -> None:
        self.stream, self.state, self.floor_us, self.keeps = stream, state, floor_us, keeps
        self.cap = limits.max_records_per_pass
        self.window_us = limits.window_s * 1_000_000
        self.chosen: Dict[str, AuditRecord] = {}
        self.read: Dict[int, int] = {}  # hash of each id read in this pass -> its place in the read order
        self.complete = self.ascending = True
        self.rose = False  # a later record was newer: the order is shown, not only claimed
        self.order_shown = False
        self.misplaced = False
        self.fetched = self.skipped = 0
        self.last_ts = -(2**63)
        self.oldest: Optional[int] = None
        self.page_no = 0
        self.page_ends: List[Tuple[int, int]] = []  # (created_at of the page's last record, its offset)
        self.unplaceable: List[Tuple[Any, str]] = []

    def take(self, page: Page) -> Feedback:
        """Read one page; the feedback is what the source's stop rules need."""
        self.page_no += 1
        added = 0
        repeats = _Repeats(len(self.read))
        for index, raw in enumerate(page.items, 1):
            self.fetched += 1
            try:
                record = parse_record(raw, self.stream.object_type)
            except InvalidRecord as exc:
                self.unplaceable.append((raw, f"page {self.page_no}, record {index}: {exc}"))
                continue
            key = hash(record.event_id)
            place = self.read.get(key)
            if place is None:
                self.read[key] = len(self.read)
                added += 1
            repeats.note(place)
            self.ascending = self.ascending and record.ts_us >= self.last_ts
            self.rose = self.rose or (self.oldest is not None and record.ts_us > self.last_ts)
            self.last_ts = record.ts_us
            self.oldest = self.last_ts if self.oldest is None else min(self.oldest, self.last_ts)
            if record.event_id in self.chosen:
                continue
            if not self.state.is_new(record, self.floor_us, self.window_us) or not self.keeps(
                self.stream, record
            ):
                self.skipped += 1
                continue
            self.chosen[record.event_id] = record
            if len(self.chosen) >= 2 * self.cap:
                kept = sorted(self.chosen.values(), key=_sort_key)[: self.cap]
                self.chosen = {r.event_id: r for r in kept}
                self.complete = False
        order_shown = self.order_shown or page.order_shown
        expected = order_shown or page.anchored  # a re-anchored page repeats the last ties
        if repeats.found and not (self.ascending and expected and repeats.shifted()):
            self.misplaced = True
        if page.items:
            self.page_ends.append((self.last_ts, page.offset))
        if self.ascending and self.rose and self.fetched >= _ORDER_EVIDENCE:
            self.order_shown = order_shown = True
        shown = self.ascending and order_shown and page.sorted_request and not self.misplaced
        enough = len(self.chosen) >= self.cap and (page.boundary or shown)
        if enough:
            self.complete = False  # the rest is newer than what is held: the next pass resumes here
        return Feedback(
            added,
            self.ascending,
            self.misplaced,
            self.last_ts if page.items else None,
            self.oldest,
            self.order_shown,
            enough,
        )

    def result(self) -> Selection:
        records = sorted(self.chosen.values(), key=_sort_key)
        complete = self.complete
        if len(records) > self.cap:
            records, complete = records[: self.cap], False
        # Every record on a page ending before the newest selected one was read and shipped or skipped.
        newest = records[-1].ts_us if records else None
        resume = next((offset for end, offset in self.page_ends if newest is None or end >= newest), 0)
        watermark = self.state.watermark_us
        late = sum(1 for r in records if watermark is not None and r.ts_us < watermark)
        return Selection(records, complete, resume, self.fetched, self.skipped, late, self.unplaceable)


class _Repeats:
    """The records of one page that were read on an earlier page of the pass. In pages that keep
    one oldest-first order they can only be the page's first records, read in a row before: records
    inserted before the offset shift the later pages, and a start_date moved back repeats its ties.
    A repeat anywhere else means the order changed between calls: what the pass skipped is unknown."""

    def __init__(self, page_start: int) -> None:
        self.page_start = page_start  # places in the read order below it were read on earlier pages
        self.found = False
        self.in_row = True
        self.fresh = False  # a record new to the pass came on this page
        self.last = -1

    def note(self, place: Optional[int]) -> None:
        """One record of the page: ``place`` is where it was first read, None if it is new."""
        if place is None:
            self.fresh = True
        elif place < self.page_start:
            self.in_row = self.in_row and not self.fresh and (not self.found or place == self.last + 1)
            self.found, self.last = True, place

    def shifted(self) -> bool:
        """The repeats are what a shift of stable pages brings: the records read last, or (a shift
        of more than a page) a page of nothing else."""
        return self.in_row and (self.last == self.page_start - 1 or not self.fresh)


def _sort_key(record: AuditRecord) -> Tuple[int, str]:
    return record.sort_key
