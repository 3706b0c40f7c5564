"""Reading one stream's audit trail with the fewest calls the service's behaviour allows.

Nothing in the spec says the audits endpoint pages, sorts or honours time bounds, so the reader
asks for the best (oldest-first pages from ``start_date``) and learns from the answers, once per run
for every stream:

* ``ascending+start_date``: pages come oldest-first, so a pass may stop once it holds its cap and the
  next pass resumes from the new watermark; an offset ceiling, or a service that ignores offset
  (every page is the first page again), re-anchors ``start_date`` at the last ``created_at`` read.
* ``offset``: oldest-first without ``start_date``: the next pass resumes at the offset it stopped at.
* ``time-windows``: no order, but ``start_date``/``end_date`` are honoured: the trail is read window
  by window, each sized to fit one page, oldest window first.
* ``full-scan``: none of the above: every pass reads the whole trail (said in the run report).

The watermark filter always runs on the client; a window's records are also cut to the window.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional

from ..errors import ApiError, StreamFailed
from ..streams import Stream
from ..timeutil import format_us
from .bounds import SECOND, bound, record_time
from .client import AUDITS_PATH, ApiClient
from .paging import PageOutcome, ReadAgain, iter_pages, may_hold_more, pages_to_ceiling, same_page
from .windows import WindowReader

log = logging.getLogger(__name__)


@dataclass
class Honoured:
    """What the service was seen to honour this run; None while unknown."""

    order: Optional[bool] = None  # sort=created_at ASC
    start_date: Optional[bool] = None
    time_bounds: Optional[bool] = None  # start_date and end_date together, as filters
    paging: Optional[bool] = None  # limit and offset
    offset: Optional[bool] = None  # False: every offset answers the first page (limit honoured)


ASCENDING, OFFSET, WINDOWS, FULL_SCAN = "ascending+start_date", "offset", "time-windows", "full-scan"


def strategy(honoured: Honoured, bounded: bool, sends_start: bool) -> str:
    """How a pass reads a stream, from what the service was seen to honour so far: oldest-first
    until pages show another order. ``bounded``: the pass has a start; ``sends_start``: the client
    still sends start_date (the service has not refused it)."""
    if honoured.order is not False:
        return ASCENDING if bounded and honoured.start_date is not False and sends_start else OFFSET
    if bounded and honoured.time_bounds is not False:
        return WINDOWS
    return FULL_SCAN


class _Unordered(Exception):
    """Pages asked oldest-first came in another order, and more pages follow."""


def _crowded(limit: Optional[int], anchor: Optional[int], why: str) -> str:
    """Re-anchoring start_date at the same second again would read the same page forever."""
    at = format_us(anchor) if anchor is not None else "the start"
    return (
        f"a whole page ({limit} record{'' if limit == 1 else 's'}) falls within the two seconds up to {at}"
        f" and {why}, so start_date "
        f"(whole seconds) cannot move past them: raise FORWARDER_PAGE_LIMIT (now {limit})"
    )


def _ascending(items: List[Any]) -> bool:
    times = [t for t in map(record_time, items) if t is not None]
    return all(a <= b for a, b in zip(times, times[1:]))


class TrailReader:
    """The pipeline's source of pages for one run; ``honoured`` is shared by every stream."""

    def __init__(self, client: ApiClient, page_limit: int, max_pages: int) -> None:
        self.client = client
        self.limit = page_limit
        self.max_pages = max_pages
        self.honoured = Honoured()
        self._lock = threading.Lock()  # _said_full_scan: stream threads share the reader; one warning a run
        self._said_full_scan = False
        self._at_least: Dict[str, int] = {}  # records a stream's paged answer held: unpaged must too
        self._windows = WindowReader(self._get, page_limit, max_pages, self.honoured)

    def pages(self, stream: Stream, start_us: Optional[int], outcome: PageOutcome) -> Iterator[List[Any]]:
        try:
            way = self._strategy(start_us)
            if way in (ASCENDING, OFFSET):
                try:
                    yield from self._ascending(stream, start_us if way == ASCENDING else None, outcome)
                    return
                except _Unordered:
                    self.honoured.order = False
                    outcome.sorted_request = False
                    outcome.reason = "pages asked oldest-first came in another order"
                    if outcome.items:
                        raise ReadAgain() from None
                way = self._strategy(start_us)
            if way == WINDOWS and start_us is not None:  # (WINDOWS has a start: for the type checker)
                yield from self._windows.read(stream, start_us, outcome)
            else:
                yield from self._full_scan(stream, start_us, outcome)
        finally:
            self._learn(outcome, start_us)

    # -- strategies -----------------------------------------------------------------------------------

    def _ascending(
        self, stream: Stream, start_us: Optional[int], outcome: PageOutcome
    ) -> Iterator[List[Any]]:
        """Oldest-first pages, from ``start_us`` when there is one (else by offset alone)."""
        with_start = start_us is not None
        outcome.strategy = ASCENDING if with_start else OFFSET
        outcome.sorted_request = True
        outcome.order_shown = self.honoured.order is True
        if with_start:
            outcome.start_offset = 0
        anchor = start_us if with_start else None
        base = 0  # the offset iter_pages counts at which the current anchor began
        first = True
        page_one: List[Any] = []  # the first page read from the current anchor
        page: List[Any] = []  # the page fetch returned last
        moved = ""  # why start_date was re-anchored in this pass, if it was

        def re_anchor(limit: Optional[int], offset: int, why: str) -> List[Any]:
            """Start again from the last created_at read (the look-back ids cover its ties)."""
            nonlocal anchor, base, moved
            last = outcome.last_us
            if last is None or anchor is None or last <= anchor:
                stuck(why)
                return []  # (the call iter_pages counts) the page was all there is from the anchor on
            log.info(f"{why}: re-anchoring start_date", extra={"stream": stream.key, "offset": offset})
            anchor, base, moved = last, offset, why
            outcome.anchored = True
            items = self._get(stream, limit, 0, sort=True, start_us=anchor)
            if any(t < anchor - 2 * SECOND for t in map(record_time, items) if t is not None):
                self.honoured.start_date = False  # the first page again: offset is all that is left
                return self._offset_ignored(stream, page_one, outcome)
            return items

        def stuck(why: str) -> None:
            """Start_date cannot move past the last page: it was either all the service holds from
            the anchor on (an unpaged request answers it again) or a crowd of records fills it."""
            whole = self._get(stream, None, 0, sort=True, start_us=anchor)
            if not same_page(page, whole):
                raise StreamFailed(_crowded(self.limit, anchor, why))

        def fetch(limit: Optional[int], offset: Optional[int]) -> List[Any]:
            nonlocal first, page_one, page
            if (not outcome.ascending or outcome.misplaced) and outcome.sorted_request:
                raise _Unordered()  # the pages read so far were not oldest-first, and more follow
            at = (offset or 0) - base
            outcome.anchored = False
            if at and self.honoured.offset is False and with_start:
                items = re_anchor(limit, offset or 0, "the service ignores offset")  # no call wasted
            else:
                try:
                    items = self._get(stream, limit, at, sort=True, start_us=anchor)
                except ApiError as exc:
                    # A 400 deep into the pages is an offset ceiling (one integration saw 9,900).
                    last = outcome.last_us
                    if exc.status != 400 or not offset or not with_start or last is None or last == anchor:
                        raise
                    outcome.pages += 1  # the refused call; iter_pages counts the re-anchored one
                    items = re_anchor(limit, offset, f"offset ceiling at {offset}")
                if at and same_page(page_one, items):  # every offset answers the first page
                    self.honoured.offset = False
                    if not with_start:  # no start_date to move on: the trail ends, or goes unpaged
                        return self._offset_ignored(stream, page_one, outcome)
                    outcome.pages += 1  # fetched, and asked again
                    items = re_anchor(limit, offset or 0, "the service ignores offset")
            if first and len(items) == limit and not _ascending(items):
                outcome.pages += 1  # fetched, and read again another way
                raise _Unordered()
            first = False
            if (offset or 0) == base:
                page_one = items
            page = items
            if not self.client.sends(AUDITS_PATH, "sort"):
                outcome.sorted_request = False
            if with_start and not self.client.sends(AUDITS_PATH, "start_date"):
                outcome.strategy = OFFSET  # refused by the first answer: the pages go by offset alone
            return items

        # An offset ceiling without start_date (with it, fetch re-anchors): the next run goes on.
        yield from pages_to_ceiling(fetch, self._page_limit(stream), self.max_pages, outcome)
        if outcome.misplaced and outcome.sorted_request:
            # The last page repeated a record out of place: the order changed between calls, so the
            # pages may have skipped records, though their count says they hold everything.
            raise _Unordered()
        if moved and outcome.added == 0 and may_hold_more(page, self.limit):
            outcome.pages += 1
            stuck(moved)  # re-anchored onto records read already
        last = outcome.last_us
        if outcome.truncated and with_start and last is not None and (anchor is None or last > anchor):
            outcome.more, outcome.resume_us = True, last  # the next pass goes on from the last record read

    def _full_scan(
        self, stream: Stream, start_us: Optional[int], outcome: PageOutcome
    ) -> Iterator[List[Any]]:
        outcome.strategy = FULL_SCAN
        with self._lock:
            first, self._said_full_scan = not self._said_full_scan, True
        if first:
            log.warning(
                "the service honours neither order nor time bounds: every pass reads whole trails",
                extra={"stream": stream.key},
            )

        page_one: List[Any] = []

        def fetch(limit: Optional[int], offset: Optional[int]) -> List[Any]:
            nonlocal page_one
            items = self._get(stream, limit, offset or 0, sort=False, start_us=start_us)
            if not offset:
                page_one = items
            elif same_page(page_one, items):  # every offset answers the first page
                self.honoured.offset = False
                return self._offset_ignored(stream, page_one, outcome)
            return items

        outcome.start_offset = 0  # no order: no page can be skipped

        yield from iter_pages(fetch, self._page_limit(stream), self.max_pages, outcome)

    # -- helpers --------------------------------------------------------------------------------------

    def _get(
        self,
        stream: Stream,
        limit: Optional[int],
        offset: int,
        *,
        sort: bool,
        start_us: Optional[int],
        end_us: Optional[int] = None,
    ) -> List[Any]:
        optional: Dict[str, Any] = {"sort": "created_at ASC"} if sort else {}
        if start_us is not None:
            optional["start_date"] = bound(start_us)
        if end_us is not None:
            optional["end_date"] = bound(end_us, up=True)
        items = self.client.audits(stream, optional, limit, offset)
        least = self._at_least.get(stream.key)
        if limit is None and least is not None:
            if len(items) < least:
                raise StreamFailed(
                    f"the service ignores offset and start_date, and answers {least} records a page "
                    f"but {len(items)} unpaged: a trail past its first page cannot be read; raise "
                    "FORWARDER_PAGE_LIMIT above the longest trail"
                )
            self.honoured.paging = False  # unpaged answers are whole: every stream asks so
        if end_us is not None and not self.client.sends(AUDITS_PATH, "end_date"):
            self.honoured.time_bounds = False
        return items

    def _offset_ignored(self, stream: Stream, page_one: List[Any], outcome: PageOutcome) -> List[Any]:
        """Every offset answers the first page, and start_date cannot move on. A first page short of
        the limit was the whole trail (or all the service shows): the pass ends. A full one may be cut
        by the limit: the pass is read again unpaged, which must answer at least as many records."""
        if len(page_one) < self.limit:
            return []  # an empty page: the end
        self._at_least[stream.key] = len(page_one)
        outcome.pages += 1  # fetched, and read again another way
        raise ReadAgain()

    def _strategy(self, start_us: Optional[int]) -> str:
        return strategy(self.honoured, start_us is not None, self.client.sends(AUDITS_PATH, "start_date"))

    def _page_limit(self, stream: Stream) -> Optional[int]:
        """None once the service was seen to ignore paging: every answer is whole, ask once."""
        unpaged = self.honoured.paging is False or stream.key in self._at_least
        return None if unpaged else self.limit

    def _learn(self, outcome: PageOutcome, start_us: Optional[int]) -> None:
        """What this pass showed about the service, for the passes and streams after it."""
        h = self.honoured
        if outcome.sorted_request and outcome.pages and not outcome.ascending:
            h.order = False
        elif outcome.sorted_request and outcome.order_shown:
            h.order = True
        if start_us is not None and outcome.oldest_us is not None:
            if outcome.oldest_us < start_us - 2 * SECOND:
                h.start_date = False
            elif h.start_date is None and outcome.strategy != OFFSET:
                h.start_date = True
        if not self.client.sends(AUDITS_PATH, "start_date"):
            h.start_date = h.time_bounds = False
        if h.start_date is False:
            h.time_bounds = False
        if outcome.reason.startswith("page longer"):
            h.paging = False
        elif outcome.pages > 1 and h.paging is None:
            h.paging = True
