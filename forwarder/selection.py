"""Which records a pass takes from the pages it reads (the oldest new ones, up to a cap), and where
the next pass starts. Pure: the pages, the state and the limits come in; nothing is fetched or
stored here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .api.paging import PageOutcome
from .errors import StreamFailed
from .records import AuditRecord, InvalidRecord, parse_record
from .report import StreamReport
from .state.model import StreamState
from .streams import Stream


@dataclass(frozen=True)
class Limits:
    """A stream's first run reads back ``initial_lookback_s``; a later one ``window_s`` behind the
    watermark, for late records; a pass holds at most ``max_records_per_pass`` new records."""

    initial_lookback_s: int
    window_s: int
    max_records_per_pass: int


@dataclass
class Selection:
    records: List[AuditRecord]  # oldest first
    complete: bool  # every new record seen fits in ``records``
    resume_offset: int = 0  # oldest-first pages: the first one that may hold a record left unshipped


# Records read in order (with a rise) before an oldest-first claim is believed enough to stop a
# pass early: a service that ignores sort cannot pass that by chance.
_ORDER_EVIDENCE = 20


def select_new(
    pages: Iterable[List[Any]],
    stream: Stream,
    state: StreamState,
    *,
    floor_us: int,
    limits: Limits,
    keeps: Callable[[Stream, AuditRecord], bool],
    report: StreamReport,
    on_unplaceable: Optional[Callable[[Any, str], None]] = None,  # keeps and counts the record
    outcome: Optional[PageOutcome] = None,
) -> Selection:
    """Keep the oldest ``max_records_per_pass`` new records of the pages.

    Memory stays bounded by twice that number whatever the backlog: past it, the newest are
    dropped from memory and the next pass picks them up. Once the cap is held, reading stops where
    every record still unread is known to be newer (oldest-first pages, or the end of a time
    window). After each page ``outcome`` hears what was read, for the source's stop rules.
    """
    outcome = outcome if outcome is not None else PageOutcome()
    cap = limits.max_records_per_pass
    window_us = limits.window_s * 1_000_000
    chosen: Dict[str, AuditRecord] = {}
    read: Dict[int, int] = {}  # hash of each id read in this pass -> its place in the read order
    complete = ascending = True
    rose = False  # a later record was newer: the order is shown, not only claimed
    fetched_before = report.fetched
    last_ts = -(2**63)
    oldest: Optional[int] = None
    page_ends: List[Tuple[int, int]] = []  # (created_at of the page's last record, its offset)
    iterator = iter(pages)
    for page_no, page in enumerate(iterator, 1):
        added = 0
        repeats = _Repeats(len(read))
        for index, raw in enumerate(page, 1):
            report.fetched += 1
            try:
                record = parse_record(raw, stream.object_type)
            except InvalidRecord as exc:
                if on_unplaceable is None:
                    report.invalid += 1
                    raise StreamFailed(f"page {page_no}, record {index}: {exc}") from None
                on_unplaceable(raw, f"page {page_no}, record {index}: {exc}")  # quarantined, counted; move on
                continue
            key = hash(record.event_id)
            place = read.get(key)
            if place is None:
                read[key] = len(read)
                added += 1
            repeats.note(place)
            ascending = ascending and record.ts_us >= last_ts
            rose = rose or (oldest is not None and record.ts_us > last_ts)
            last_ts = record.ts_us
            oldest = last_ts if oldest is None else min(oldest, last_ts)
            if record.event_id in chosen:
                continue
            if not state.is_new(record, floor_us, window_us) or not keeps(stream, record):
                report.skipped += 1
                continue
            chosen[record.event_id] = record
            if len(chosen) >= 2 * cap:
                chosen = {r.event_id: r for r in sorted(chosen.values(), key=_sort_key)[:cap]}
                complete = False
        outcome.added, outcome.ascending, outcome.oldest_us = added, ascending, oldest
        expected = outcome.order_shown or outcome.anchored  # a re-anchored page repeats the last ties
        if repeats.found and not (ascending and expected and repeats.shifted()):
            outcome.misplaced = True
        if page:
            outcome.last_us = last_ts
            page_ends.append((last_ts, outcome.page_offset))
        if ascending and rose and report.fetched - fetched_before >= _ORDER_EVIDENCE:
            outcome.order_shown = True
        shown = ascending and outcome.order_shown and outcome.sorted_request and not outcome.misplaced
        if len(chosen) >= cap and (outcome.boundary or shown):
            complete = False  # the rest is newer than what is held: the next pass resumes here
            break
    close = getattr(iterator, "close", None)
    if close is not None:
        close()  # no more pages wanted: a generator source stops fetching now
    records = sorted(chosen.values(), key=_sort_key)
    if len(records) > cap:
        records, complete = records[:cap], False
    # Every record on a page ending before the newest selected one was read and shipped or skipped.
    newest = records[-1].ts_us if records else None
    resume = next((offset for end, offset in page_ends if newest is None or end >= newest), 0)
    return Selection(records, complete, resume)


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


def start_hint(state: StreamState, floor_us: int, window_us: int) -> int:
    """The earliest created_at the stream could still need: a start_date for the service."""
    return floor_us if state.watermark_us is None else state.watermark_us - window_us


def next_pass(outcome: PageOutcome, selection: Selection) -> Tuple[Optional[int], PageOutcome]:
    """Where the pass after this one starts, inside the same run.

    A pass cut off by the cap leaves unshipped only records at or after the newest one it selected
    (it read every older one in its range), from ``resume_offset`` on in oldest-first pages; a pass the source
    stopped (page cap, windows left) goes on where it stopped. Late records older than that are
    the next run's: its look-back window covers them.
    """
    if not selection.complete:
        return selection.records[-1].ts_us, PageOutcome(start_offset=selection.resume_offset)
    return outcome.resume_us, PageOutcome(start_offset=outcome.start_offset + outcome.items)
