"""Reading one stream's audit trail with the fewest calls the service's behaviour allows.

Nothing in the spec says the audits endpoint pages, sorts or honours time bounds, so the reader
asks for the best (oldest-first pages from ``start_date``) and learns from the answers, once per run
for every stream (the strategies: ``strategy.py``). The watermark filter always runs on the client
(``select.py``); a window's records are also cut to the window.

``TrailReader.pages`` is a source (``pages.py``): it yields pages, hears the reader's feedback and
returns how the read ended. Two exceptions stay inside this module: ``_Unordered`` (pages asked
oldest-first came in another order) and ``_ReadAgain``; the face turns them into a strategy change
or into ``ReadEnd.read_again``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, List, Optional

from ..api.bounds import SECOND, bound, record_time
from ..api.client import AUDITS_PATH, ApiClient
from ..errors import ApiError, StreamFailed
from ..jsonutil import canonical
from ..streams import Stream
from ..timeutil import format_us
from .pages import Pages, PageSize, Source, Tally, iter_pages, may_hold_more, pages_to_ceiling, same_page
from .strategy import ASCENDING, FULL_SCAN, OFFSET, WINDOWS, Honoured, learn, strategy
from .windows import WindowReader

log = logging.getLogger(__name__)


class _ReadAgain(Exception):
    """Pages asked oldest-first turned out in another order after some were read (or a full first
    page must be read again unpaged): what was read cannot be trusted, so the pass starts over."""


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
        self.sizes = PageSize(page_limit)  # what the service's pages hold: every stream learns it
        self._windows = WindowReader(self._get, self.sizes, max_pages, self.honoured)

    def pages(self, stream: Stream, start_us: Optional[int], start_offset: int = 0) -> Source:
        """Pages of ``stream`` from ``start_us`` (a hint the service may ignore), offset paging from
        ``start_offset``; returns how the read ended."""
        tally = Tally(start_offset=start_offset)
        try:
            yield from self._read(stream, start_us, tally)
        except _ReadAgain:
            return tally.end(read_again=True)
        finally:
            learn(self.honoured, tally, start_us, self.client.sends(AUDITS_PATH, "start_date"))
        return tally.end()

    def _read(self, stream: Stream, start_us: Optional[int], tally: Tally) -> Pages:
        way = self._strategy(start_us)
        if way in (ASCENDING, OFFSET):
            try:
                yield from self._ascending(stream, start_us if way == ASCENDING else None, tally)
                return
            except _Unordered:
                self.honoured.order = False
                tally.sorted_request = False
                tally.reason = "pages asked oldest-first came in another order"
                if tally.items:
                    raise _ReadAgain() from None
            way = self._strategy(start_us)
        if way == WINDOWS and start_us is not None:  # (WINDOWS has a start: for the type checker)
            yield from self._windows.read(stream, start_us, tally)
        else:
            yield from self._full_scan(stream, start_us, tally)

    # -- strategies -----------------------------------------------------------------------------------

    def _ascending(self, stream: Stream, start_us: Optional[int], tally: Tally) -> Pages:
        """Oldest-first pages, from ``start_us`` when there is one (else by offset alone)."""
        with_start = start_us is not None
        tally.strategy = ASCENDING if with_start else OFFSET
        tally.sorted_request = True
        tally.order_shown = self.honoured.order is True
        if with_start:
            tally.start_offset = 0
        anchor = start_us if with_start else None
        base = 0  # the offset iter_pages counts at which the current anchor began
        first = True
        page_one: List[Any] = []  # the first page read from the current anchor
        page: List[Any] = []  # the page fetch returned last
        moved = ""  # why start_date was re-anchored in this pass, if it was

        def re_anchor(limit: Optional[int], offset: int, why: str) -> List[Any]:
            """Start again from the last created_at read (the look-back ids cover its ties)."""
            nonlocal anchor, base, moved
            last = tally.last_us
            if anchor is not None and any(
                t < anchor - 2 * SECOND for t in map(record_time, page) if t is not None
            ):
                self.honoured.start_date = (
                    False  # the page began before the anchor: offset is all that is left
                )
                # No call of its own: the one _offset_ignored (or iter_pages) counts for it was counted
                # by the caller, or never made (offset known to be ignored).
                tally.pages -= 1
                return self._offset_ignored(stream, page_one, tally)
            if last is None or anchor is None or last <= anchor:
                stuck(why)
                return []  # (the call iter_pages counts) the page was all there is from the anchor on
            log.info(f"{why}: re-anchoring start_date", extra={"stream": stream.key, "offset": offset})
            anchor, base, moved = last, offset, why
            tally.anchored = True
            items = self._get(stream, limit, 0, sort=True, start_us=anchor, tally=tally)
            if any(t < anchor - 2 * SECOND for t in map(record_time, items) if t is not None):
                self.honoured.start_date = False  # the first page again: offset is all that is left
                return self._offset_ignored(stream, page_one, tally)
            return items

        def stuck(why: str) -> None:
            """Start_date cannot move past the last page: it was either all the service holds from
            the anchor on (an unpaged request answers it again) or a crowd of records fills it."""
            whole = self._get(stream, None, 0, sort=True, start_us=anchor, tally=tally)
            if not same_page(page, whole):
                raise StreamFailed(_crowded(self.limit, anchor, why))

        def past_short_page(limit: Optional[int], offset: int) -> List[Any]:
            """A short page out of order may be the service's page size: the page past it tells. Empty:
            the short page held everything from the anchor. The same page (offset ignored) tells
            nothing: that page may still be cut at the service's page size (``_offset_ignored``)."""
            items = self._get(stream, limit, offset - base, sort=True, start_us=anchor, tally=tally)
            if not items:
                return []
            if same_page(page, items):
                self.honoured.offset = False
                return self._offset_ignored(stream, page, tally)
            self.sizes.followed(len(page))
            tally.pages += 1  # fetched, and read again another way
            raise _Unordered()

        def fetch(limit: Optional[int], offset: Optional[int]) -> List[Any]:
            nonlocal first, page_one, page
            if (not tally.ascending or tally.misplaced) and tally.sorted_request:
                if page and len(page) < self.limit:
                    return past_short_page(limit, offset or 0)
                raise _Unordered()  # the pages read so far were not oldest-first, and more follow
            at = (offset or 0) - base
            tally.anchored = False
            if at and self.honoured.offset is False and with_start:
                items = re_anchor(limit, offset or 0, "the service ignores offset")  # no call wasted
            else:
                try:
                    items = self._get(stream, limit, at, sort=True, start_us=anchor, tally=tally)
                except ApiError as exc:
                    # A 400 deep into the pages is an offset ceiling (one integration saw 9,900).
                    last = tally.last_us
                    if exc.status != 400 or not offset or not with_start or last is None or last == anchor:
                        raise
                    tally.pages += 1  # the refused call; iter_pages counts the re-anchored one
                    items = re_anchor(limit, offset, f"offset ceiling at {offset}")
                if at and same_page(page_one, items):  # every offset answers the first page
                    self.honoured.offset = False
                    if not with_start:  # no start_date to move on: the trail ends, or goes unpaged
                        return self._offset_ignored(stream, page_one, tally)
                    tally.pages += 1  # fetched, and asked again
                    items = re_anchor(limit, offset or 0, "the service ignores offset")
            if first and len(items) == limit and not _ascending(items):
                tally.pages += 1  # fetched, and read again another way
                raise _Unordered()
            first = False
            if (offset or 0) == base:
                page_one = items
            page = items
            if not self.client.sends(AUDITS_PATH, "sort"):
                tally.sorted_request = False
            if with_start and not self.client.sends(AUDITS_PATH, "start_date"):
                tally.strategy = OFFSET  # refused by the first answer: the pages go by offset alone
            return items

        # An offset ceiling without start_date (with it, fetch re-anchors): the next run goes on.
        yield from pages_to_ceiling(
            iter_pages(fetch, self._page_limit(stream), self.max_pages, tally, self.sizes), tally
        )
        if tally.enough:
            return
        if tally.misplaced and tally.sorted_request:
            # The last page repeated a record out of place: the order changed between calls, so the
            # pages may have skipped records, though their count says they hold everything.
            raise _Unordered()
        if moved and tally.added == 0 and may_hold_more(page, self.limit):
            tally.pages += 1
            stuck(moved)  # re-anchored onto records read already
        last = tally.last_us
        if tally.truncated and with_start and last is not None and (anchor is None or last > anchor):
            tally.more, tally.resume_us = True, last  # the next pass goes on from the last record read

    def _full_scan(self, stream: Stream, start_us: Optional[int], tally: Tally) -> Pages:
        tally.strategy = FULL_SCAN
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
            items = self._get(stream, limit, offset or 0, sort=False, start_us=start_us, tally=tally)
            if not offset:
                page_one = items
            elif same_page(page_one, items):  # every offset answers the first page
                self.honoured.offset = False
                return self._offset_ignored(stream, page_one, tally)
            return items

        tally.start_offset = 0  # no order: no page can be skipped

        yield from iter_pages(fetch, self._page_limit(stream), self.max_pages, tally, self.sizes)

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
        tally: Optional[Tally] = None,
    ) -> List[Any]:
        """One page; ``tally`` counts a cross-check call (``_whole``)."""
        optional: Dict[str, Any] = {"sort": "created_at ASC"} if sort else {}
        if start_us is not None:
            optional["start_date"] = bound(start_us)
        if end_us is not None:
            optional["end_date"] = bound(end_us, up=True)
        items = self.client.audits(stream, optional, limit, offset)
        self.sizes.saw(len(items), limit)
        least = self._at_least.get(stream.key)
        if limit is None and least is not None:
            if len(items) < least:
                raise StreamFailed(
                    f"the service ignores offset and start_date, and answers {least} records a page "
                    f"but {len(items)} unpaged: a trail past its first page cannot be read; raise "
                    "FORWARDER_PAGE_LIMIT above the longest trail"
                )
            self.honoured.paging = False  # unpaged answers are whole: every stream asks so
        # (A paged answer short of the limit is read again unpaged only where limit is honoured.)
        if limit is None and (self.sizes.honoured or (least is not None and least < self.limit)):
            self._whole(stream, items, optional, tally)
        if end_us is not None and not self.client.sends(AUDITS_PATH, "end_date"):
            self.honoured.time_bounds = False
        return items

    def _whole(
        self, stream: Stream, items: List[Any], optional: Dict[str, Any], tally: Optional[Tally]
    ) -> None:
        """An answer without ``limit`` from a service that honours ``limit`` may be its default page,
        not the whole trail. It is trusted once a re-read asking for one record more brings back the
        same records; otherwise nothing past it can be proven read, and the stream fails without
        shipping. (A service whose explicit limits are capped at its default page size answers both
        alike, whole or not: no count tells them apart without offset or time bounds.)"""
        count = len(items)
        again = self.client.audits(stream, optional, count + 1, 0)
        if tally is not None:
            tally.pages += 1
        if len(again) > count:
            why = f"more when asked for {count + 1}"
        elif sorted(map(canonical, again)) != sorted(map(canonical, items)):
            why = f"other records when asked for {count + 1}"
        else:
            return
        raise StreamFailed(
            f"the service ignores offset and start_date, and answers {count} records without a limit but "
            f"{why}: the answer may be a default page, not the whole trail, so the records past it cannot "
            "be read; raise FORWARDER_PAGE_LIMIT above the longest trail, or ask the service to honour offset"
        )

    def _offset_ignored(self, stream: Stream, page_one: List[Any], tally: Tally) -> List[Any]:
        """Every offset answers the first page, and start_date cannot move on. A first page that ends
        paging (``PageSize.is_last``) was the whole trail (or all the service shows): the pass ends.
        Any other may be cut by the limit or by the service's own page size (a short page of 10 to an
        ask of 11 is no end). Unless a request for one record shows the service ignores limit too (its
        answers are whole), the pass is read again unpaged, which must answer at least as many records
        and, after a short page, the same when asked for one more (``_whole``)."""
        if self.sizes.is_last(len(page_one)):
            return []  # an empty page: the end
        if len(page_one) < self.limit and not self._limit_honoured(stream, tally):
            return []  # the service ignores paging: every answer, that short page too, is whole
        self._at_least[stream.key] = len(page_one)
        tally.pages += 1  # fetched, and read again another way
        raise _ReadAgain()

    def _limit_honoured(self, stream: Stream, tally: Tally) -> bool:
        """Whether the service honours ``limit`` (asked for one record), once a run: a service that
        ignores offset and limit answers whole, one that honours limit may cut its pages short."""
        if self.honoured.paging is None:
            tally.pages += 1
            if len(self._get(stream, 1, 0, sort=False, start_us=None)) > 1:
                self.honoured.paging, self.sizes.whole = False, True
        return self.honoured.paging is not False

    def _strategy(self, start_us: Optional[int]) -> str:
        return strategy(self.honoured, start_us is not None, self.client.sends(AUDITS_PATH, "start_date"))

    def _page_limit(self, stream: Stream) -> Optional[int]:
        """None once the service was seen to ignore paging: every answer is whole, ask once."""
        unpaged = self.honoured.paging is False or stream.key in self._at_least
        return None if unpaged else self.limit
