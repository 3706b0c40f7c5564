"""The ``time-windows`` strategy: a service that ignores order but honours ``start_date`` and
``end_date`` is read window by window, oldest first, each window sized to fit one page.

A window whose page comes back full is halved until it fits; a one-second window that still fills a
page is paged through (``_rest_of_window``), and again while the service reorders between calls,
until it has come whole. What the answers show about the service goes into the shared ``Honoured``.

The newest window is asked without ``end_date``: a service honouring it would otherwise never answer
a record dated past the clock (say 9999), which the other strategies ship once and report as future.
When such records fill half of that open window's page, halving it would end at one second on every
pass (no window short of 9999 leaves them out): the present is then read in windows ending at the
clock plus skew, and the records past it in one open-ended window of their own, paged through.
Which streams need that is kept for the run's later passes, which skip the open window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Set

from ..api.bounds import SECOND, record_time
from ..errors import StreamFailed
from ..jsonutil import canonical
from ..streams import Stream
from ..timeutil import format_us, now_us
from .pages import Pages, PageSize, Tally, same_page

if TYPE_CHECKING:
    from .strategy import Honoured

_SKEW_US = 300 * SECOND  # the newest window reaches past the local clock by this much
_FOREVER = 2**63  # the end of the window past the clock, which has none
_WINDOW_ROUNDS = 8  # times one over-full window is paged through while the service reorders

# (stream, limit, offset, *, sort, start_us, end_us, tally) -> the page's records
Fetch = Callable[..., List[Any]]


class WindowReader:
    """Reads streams by time windows; the window length learnt per stream is kept across passes."""

    def __init__(self, fetch: Fetch, sizes: PageSize, max_pages: int, honoured: Honoured) -> None:
        self._fetch = fetch
        self.sizes = sizes
        self.limit = sizes.limit
        self.max_pages = max_pages
        self.honoured = honoured
        self._spans: Dict[str, int] = {}  # time-window length per stream, carried across passes
        self._future_pages: Set[str] = set()  # streams whose records past the clock fill a page

    def read(self, stream: Stream, start_us: int, tally: Tally) -> Pages:
        """Oldest window first, each asked to fit one page: a full page splits the window."""
        tally.strategy = "time-windows"
        # A pass resumed past the clock (the cap stopped at a future-dated record) still asks once.
        end_us = max(now_us() + _SKEW_US, start_us + 1)
        low = start_us
        # The first window asks for everything (an idle stream costs one call); later ones are sized
        # from what the last one held, carried across passes.
        span = self._spans.get(stream.key, end_us - low)
        apart = stream.key in self._future_pages  # records past end_us are read in a window of their own
        while low < (_FOREVER if apart else end_us) and tally.pages < self.max_pages:
            future = low >= end_us  # the window past the clock: never split, paged through when full
            high = _FOREVER if future else min(low + span, end_us)
            until = None if future or (high == end_us and not apart) else high  # the newest is open-ended
            items = self._fetch(stream, self.limit, 0, sort=False, start_us=low, end_us=until)
            tally.pages += 1
            times = [record_time(r) for r in items]
            # The bounds sent are whole seconds, widened (bounds.bound); the newest has no upper end.
            if any(t is not None and _outside(t, low - 2 * SECOND, until, 2 * SECOND) for t in times):
                # The bounds are ignored: the next pass (and stream) scans instead, from here.
                self.honoured.time_bounds = False
                tally.more, tally.resume_us = True, low
                tally.reason = "the service ignores start_date/end_date"
                return
            if len(items) > self.limit:
                self.honoured.paging = False  # every answer is whole: a full page is too
            full = self.honoured.paging is not False and self._cut(stream, low, until, items, tally)
            ahead = sum(1 for t in times if t is not None and t >= end_us) if until is None else 0
            if full and not future and 2 * ahead >= self.sizes.size():
                # Records past the clock fill half the page: no window short of theirs leaves them
                # out, so halving this one would end at a second, on every pass. A few are left to
                # halving, which ends with them in the newest window at no call more.
                apart = True
                continue
            if full and not future and high - low > SECOND:
                span = max(SECOND, (high - low) // 2)  # maybe cut off by the page size: ask for less
                continue
            if future:  # the next pass (in this run) reads them apart at once, while they fill a page
                (self._future_pages.add if full else self._future_pages.discard)(stream.key)
            if full:  # a second (or the future) holding a full page: page through it
                rest = self._rest_of_window(stream, low, until, items, tally)
                if rest is None:  # out of pages: this window is read again, whole, by the next pass
                    break
                items += rest
                times = [record_time(r) for r in items]
            # A record without a usable time goes with the first window only (the reader reports it);
            # the others up to, not including, the window's end (past=-1).
            inside = [
                r
                for r, t in zip(items, times)
                if (not _outside(t, low, until, -1) if t is not None else low == start_us)
            ]
            tally.items += len(inside)
            tally.hear((yield tally.page(inside, boundary=True)))
            if tally.enough:
                return
            low = high
            if not future:
                fill = max(len(items), 1) / self.sizes.size()
                span = max(SECOND, min(int(span / fill * 0.6), 4 * span))  # aim at ~60% of a page
                self._spans[stream.key] = span
        if low < (_FOREVER if apart else end_us):
            tally.truncated = tally.more = True
            tally.resume_us = low
            tally.reason = f"page cap of {self.max_pages} reached"

    def _cut(self, stream: Stream, low: int, high: Optional[int], items: List[Any], tally: Tally) -> bool:
        """Whether a window's answer may hold fewer records than the window: a full page, or one
        that may be the service's own page size, which one request past it tells (and so learns)."""
        count = len(items)
        if not count or self.sizes.is_last(count):
            return False
        if count >= self.sizes.size():
            return True
        more = self._fetch(stream, self.limit, count, sort=False, start_us=low, end_us=high, tally=tally)
        tally.pages += 1
        if more and not same_page(items, more):
            self.sizes.followed(count)
        return bool(more)

    def _rest_of_window(
        self, stream: Stream, low: int, high: Optional[int], first: List[Any], tally: Tally
    ) -> Optional[List[Any]]:
        """The records after ``first`` of a window too narrow to split; None once out of pages.

        Pages of one order add up to the window's size, each record once. A service that reorders
        between calls repeats some records and skips others: then the window is paged through again
        (each call reorders) until as many different records came as the pages added up to."""
        seen = {canonical(r) for r in first}
        rest: List[Any] = []
        offset = size = len(first)
        rounds = 1
        while tally.pages < self.max_pages:
            page = self._fetch(stream, self.limit, offset, sort=False, start_us=low, end_us=high)
            tally.pages += 1
            if offset == len(first) and {canonical(r) for r in page} == seen:
                return self._unpaged_window(stream, low, high, seen, tally)
            fresh = 0
            for record in page:
                key = canonical(record)
                if key not in seen:
                    seen.add(key)
                    rest.append(record)
                    fresh += 1
            offset, size = offset + len(page), size + len(page)
            if len(page) >= self.sizes.size() and fresh:
                continue
            if len(page) < self.sizes.size() and len(seen) >= size:
                return rest
            if rounds == _WINDOW_ROUNDS:
                raise StreamFailed(
                    f"{_window_text(low, high)} holds more records than a page and the "
                    "service answers its pages in a different order on every call, so some are never "
                    "returned: raise FORWARDER_PAGE_LIMIT"
                )
            rounds, offset, size = rounds + 1, 0, 0
        return None

    def _unpaged_window(
        self, stream: Stream, low: int, high: Optional[int], seen: Set[bytes], tally: Tally
    ) -> List[Any]:
        """The first page came again past it: the service ignores offset. If it ignores paging as a
        whole, that page was the whole window (one unpaged request shows it); if it honours limit, a
        second holding more than a page cannot be read past its first page."""
        whole = self._fetch(stream, None, 0, sort=False, start_us=low, end_us=high, tally=tally)
        tally.pages += 1
        if {canonical(r) for r in whole} == seen:
            return []
        raise StreamFailed(
            f"{_window_text(low, high)} holds more records than a page and the service "
            "ignores offset, so only its first page can be read: raise FORWARDER_PAGE_LIMIT"
        )


def _outside(t: int, low: int, high: Optional[int], past: int) -> bool:
    """Whether ``t`` falls before ``low`` or more than ``past`` after ``high``; an open-ended
    window (``high`` None) has no upper end."""
    return t < low or (high is not None and t > high + past)


def _window_text(low: int, high: Optional[int]) -> str:
    return f"{format_us(low)} to {format_us(high)}" if high is not None else f"{format_us(low)} onwards"
