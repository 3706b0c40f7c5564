"""Paging: what a source hands the reader of a pass (``Page``), what the reader answers after each
page (``Feedback``), how a source's read ends (``ReadEnd``), and the limit/offset pager itself.

A source is a generator: it yields a ``Page``, receives the reader's ``Feedback`` (``send``), and
returns a ``ReadEnd``. Its own account of the pass (``Tally``) is written by the source alone; the
reader's feedback enters it in one place (``Tally.hear``).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any, Callable, Generator, List, Optional

from ..errors import ApiError
from ..jsonutil import ascii_text, canonical

# Page sizes a service may cap pages at, below the limit asked: a short page of one of these may
# not be the last.
_SERVICE_CAPS = frozenset({25, 50, 100})
# Pages shorter than this are not a service's page size: a short one is the end (see PageSize).
SMALLEST_CAP = 10


@dataclass(frozen=True)
class Page:
    """One page of raw records, with what the source knows about where it sits."""

    items: List[Any]
    offset: int = 0  # offset of the page in oldest-first paging
    boundary: bool = False  # the page closes a time window: every later record is newer
    anchored: bool = False  # the page starts again from the last created_at read (it repeats ties)
    sorted_request: bool = False  # asked oldest-first: once the order is shown, a pass may stop
    order_shown: bool = False  # enough records came oldest-first (this pass or an earlier one)


@dataclass(frozen=True)
class Feedback:
    """What the reader of the pages saw, after each page: the source's stop rules need it."""

    added: int  # records on the page not seen before in this pass
    ascending: bool = True  # every record so far was at least as new as the one before
    misplaced: bool = False  # a record came again where pages kept in one order cannot repeat it
    last_us: Optional[int] = None  # created_at of the last record read
    oldest_us: Optional[int] = None
    order_shown: bool = False
    enough: bool = False  # the reader holds its cap and the rest is newer: the source stops here


@dataclass(frozen=True)
class ReadEnd:
    """How a source's read of a pass ended."""

    calls: int = 0
    items: int = 0  # records the pages held (offset paging goes on after them)
    strategy: str = ""  # ascending+start_date, offset, time-windows, full-scan
    reason: str = ""
    truncated: bool = False  # stopped by the page cap or an offset limit, not by the end of data
    more: bool = False  # the source stopped before the end of its range; ``resume_us`` says where
    resume_us: Optional[int] = None
    next_offset: int = 0  # where offset paging goes on (the pass resumed without start_date)
    read_again: bool = False  # what was read cannot be trusted: the same start is read another way


# A source: pages out, the reader's feedback in (None from a plain ``for`` loop), the end returned.
Source = Generator[Page, Optional[Feedback], ReadEnd]


@dataclass
class Tally:
    """A source's account of the pass it reads, written by the source only (and ``hear``)."""

    pages: int = 0
    items: int = 0
    truncated: bool = False
    reason: str = ""
    strategy: str = ""
    sorted_request: bool = False
    order_shown: bool = False
    anchored: bool = False
    more: bool = False
    resume_us: Optional[int] = None
    start_offset: int = 0  # where offset paging starts (a pass resumed without start_date)
    page_offset: int = 0  # offset of the page just yielded
    # -- heard from the reader after each page
    added: Optional[int] = None
    ascending: bool = True
    misplaced: bool = False
    last_us: Optional[int] = None
    oldest_us: Optional[int] = None
    enough: bool = False

    def page(self, items: List[Any], boundary: bool = False) -> Page:
        return Page(items, self.page_offset, boundary, self.anchored, self.sorted_request, self.order_shown)

    def hear(self, feedback: Optional[Feedback]) -> None:
        if feedback is None:
            return
        self.added, self.ascending, self.misplaced = feedback.added, feedback.ascending, feedback.misplaced
        self.oldest_us, self.enough = feedback.oldest_us, feedback.enough
        self.order_shown = self.order_shown or feedback.order_shown
        if feedback.last_us is not None:
            self.last_us = feedback.last_us

    def end(self, read_again: bool = False) -> ReadEnd:
        return ReadEnd(
            self.pages,
            self.items,
            self.strategy,
            self.reason,
            self.truncated,
            self.more,
            self.resume_us,
            self.start_offset + self.items,
            read_again,
        )


def may_hold_more(page: List[Any], limit: int) -> bool:
    """A page this long may have been cut by the limit or by the service's own page size."""
    return len(page) >= limit or len(page) in _SERVICE_CAPS


class PageSize:
    """What a run learnt of the service's page size, shared by its streams (a cap is the service's).

    A page shorter than the limit asked ends paging only where the service has shown it honours
    that limit (a page of exactly ``limit`` records came), where the page is shorter than another
    the service answered (pages cut by a cap are all as long as the cap), or shorter than the cap
    learnt (a short page that was followed by more). Anywhere else it may be the service's own page
    size, and the page past it is asked for (which learns the cap), one stream at a time
    (``asking``): the others learn from its answer. One exception ends paging there: a page of
    fewer than ``SMALLEST_CAP`` records (no service cuts its pages that short, and an idle poll, a
    record or two, costs one call). A service that ignores offset answers the same page past it,
    which proves nothing: it may still cut its pages (``TrailReader._offset_ignored`` tells, and
    ``whole`` keeps what it learnt: the service ignores limit too). Pages that came
    oldest-first are asked past too: stopping there would lose nothing, but a service with a page
    size of its own would then deliver one page a run.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.honoured = False  # a page of exactly ``limit`` records came
        self.cap: Optional[int] = None  # a page this long, short of the limit, was followed by more
        self.longest = 0  # the longest answer short of the limit asked
        self.whole = False  # the service ignores limit and offset: every answer is all it holds
        self.asking = threading.Lock()  # held by the one stream asking past an ambiguous short page

    def saw(self, count: int, asked: Optional[int]) -> None:
        """An answer of ``count`` records to a request for ``asked`` (None: no limit sent)."""
        if asked is None:
            return
        if count == asked == self.limit:
            self.honoured = True
        elif count < asked:
            self.longest = max(self.longest, count)

    def followed(self, count: int) -> None:
        """A page of ``count`` records, short of the limit, was followed by more: the cap."""
        if count < self.limit:
            self.cap = max(self.cap or 0, count)

    def size(self) -> int:
        """How many records a full page holds."""
        return self.cap or self.limit

    def is_last(self, count: int) -> bool:
        """Whether a page of ``count`` records ends paging."""
        if count >= self.limit:
            return False
        if self.cap is not None:
            return count < self.cap
        return self.honoured or self.whole or count < max(self.longest, SMALLEST_CAP)


def same_page(first: List[Any], items: List[Any]) -> bool:
    """Whether a page past the first holds the first page's records again, in any order: the
    service ignores offset and answers every page with the first one (an unordered one shuffled)."""
    if not first or len(items) != len(first) or items[0] not in first:
        return False
    return items == first or sorted(map(canonical, items)) == sorted(map(canonical, first))


def _fingerprint(items: List[Any]) -> str:
    h = hashlib.sha256()
    for item in (items[0], items[-1]):
        h.update(ascii_text(item).encode("ascii"))  # any item: hostile ones are quarantined later
    h.update(str(len(items)).encode())
    return h.hexdigest()


Pages = Generator[Page, Optional[Feedback], None]


def iter_pages(
    fetch: Callable[[Optional[int], Optional[int]], List[Any]],
    limit: Optional[int],
    max_pages: int,
    tally: Tally,
    sizes: Optional[PageSize] = None,
) -> Pages:
    """Yield pages from ``fetch(limit, offset)`` until the data ends, from ``tally.start_offset``.

    ``limit`` None means the service does not page: one request. The end is an empty page, a page
    longer than ``limit`` (the service ignores paging: that was everything), a page that brings no
    record new to this pass (as the reader's feedback says; without a reader, a page that repeats
    the previous one), a short page, or the reader's ``enough``. Which short page ends paging is
    ``sizes``'s to say (what the run learnt of the service's page size); without it, a short page
    of 25, 50 or 100 records might be the service's own page cap (25 is the documented default), so
    one more request confirms it rather than risk stopping early.
    """
    offset = tally.start_offset
    previous: Optional[List[Any]] = None  # the page before, while no reader reports ``added``
    short = 0  # the last page was this long, short of the limit, and paging went on
    while tally.pages < max_pages:
        if sizes is not None and short:
            # One stream at a time asks past a short page that may be the service's page size; the
            # others wait and learn from its answer (a cap, or offset ignored) rather than ask too.
            with sizes.asking:
                if sizes.is_last(short):
                    tally.reason = "short page"
                    return
                items = fetch(limit, offset)
        else:
            items = fetch(limit, offset if limit is not None else None)
        tally.pages += 1
        if not items:
            tally.reason = "empty page"
            return
        # Fingerprints only once there are two pages to compare: most reads are one page.
        if previous is not None and tally.added is None and _fingerprint(items) == _fingerprint(previous):
            tally.reason = "repeated page"
            return
        previous = items
        tally.items += len(items)
        tally.page_offset = offset
        tally.hear((yield tally.page(items)))
        if sizes is not None and short and tally.added != 0:
            sizes.followed(short)  # more came after a short page (not the same page again): the cap
        if tally.enough:
            return
        if limit is None:
            tally.reason = "single response"
            return
        if len(items) > limit:
            tally.reason = "page longer than the limit asked (the service ignores paging)"
            return
        if tally.added == 0:
            tally.reason = "page brought no new record (the service ignores offset)"
            return
        if sizes.is_last(len(items)) if sizes is not None else not may_hold_more(items, limit):
            tally.reason = "short page"
            return
        short = len(items) if len(items) < limit else 0
        offset += len(items)
    tally.truncated = True
    tally.reason = f"page cap of {max_pages} reached"


def pages_to_ceiling(pages: Pages, tally: Tally) -> Pages:
    """``pages`` (of ``iter_pages``), where a 400 past the first page is the service's offset ceiling
    (one integration saw 9,900): the pages read so far stand and the pass ends truncated there."""
    try:
        yield from pages
    except ApiError as exc:
        if exc.status != 400 or tally.pages == 0:
            raise
        tally.truncated = True
        tally.reason = f"service refused offset {tally.items}"
