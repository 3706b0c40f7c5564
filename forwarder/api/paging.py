"""Envelopes and paging. Neither is in the spec, so both are inferred from the answers."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional

from ..errors import ApiError, MalformedResponse
from ..jsonutil import ascii_text, canonical
from ..logs import clip

# Keys that hold the list in the enveloped style; the resource's plural comes first.
_LIST_KEYS = ("data", "items", "results", "records")
# Page sizes a service may cap pages at, below the limit asked: a short page of one of these may
# not be the last.
_SERVICE_CAPS = frozenset({25, 50, 100})


def extract_items(body: Any, plural: str) -> List[Any]:
    """The list inside a response: a bare list, or an object holding it under ``plural``."""
    if isinstance(body, list):
        return body
    if not isinstance(body, dict):
        raise MalformedResponse(f"expected a JSON list or object, got {type(body).__name__}")
    if body.get("status") == "error" or ("error" in body and plural not in body):
        detail = body.get("error_description") or body.get("error") or "error"
        raise ApiError(f"the API answered with an error body: {clip(str(detail))}", status=body.get("code"))
    for key in (plural, *_LIST_KEYS):
        value = body.get(key)
        if isinstance(value, list):
            return value
    lists = [k for k, v in body.items() if isinstance(v, list)]
    if len(lists) == 1:
        return list(body[lists[0]])
    keys = ", ".join(sorted(map(str, body))[:10])
    raise MalformedResponse(f"response object holds no {plural!r} list (keys: {keys or 'none'})")


def may_hold_more(page: List[Any], limit: int) -> bool:
    """A page this long may have been cut by the limit or by the service's own page size."""
    return len(page) >= limit or len(page) in _SERVICE_CAPS


def same_page(first: List[Any], items: List[Any]) -> bool:
    """Whether a page past the first holds the first page's records again, in any order: the
    service ignores offset and answers every page with the first one (an unordered one shuffled)."""
    if not first or len(items) != len(first) or items[0] not in first:
        return False
    return items == first or sorted(map(canonical, items)) == sorted(map(canonical, first))


class ReadAgain(Exception):
    """Pages asked oldest-first turned out in another order after some were read: what was read
    cannot be trusted to hold the oldest new records, so the pass starts over another way."""


@dataclass
class PageOutcome:
    """One pass over a stream: what the source asked and found, and what its reader saw.

    The source (the API reader) fills the request side; the reader of the pages
    (``selection.select_new``) reports after every page, before the source asks for the next one.
    """

    pages: int = 0
    items: int = 0
    truncated: bool = False  # stopped by the page cap or an offset limit, not by the end of data
    reason: str = ""
    # -- set by the source
    strategy: str = ""  # how the pass reads the stream: ascending+start_date, offset, time-windows, ...
    sorted_request: bool = False  # pages were asked oldest-first: once they prove it, a pass may stop
    order_shown: bool = False  # enough records came oldest-first (this pass or an earlier one)
    boundary: bool = False  # the page just yielded closes a time window: every later record is newer
    anchored: bool = False  # the page just yielded starts again from the last created_at read
    more: bool = False  # the source stopped before the end of its range; ``resume_us`` says where
    resume_us: Optional[int] = None
    start_offset: int = 0  # where offset paging starts (a pass resumed without start_date)
    page_offset: int = 0  # offset of the page just yielded
    # -- reported by the reader after each page
    added: Optional[int] = None  # records on the page not seen before in this pass
    ascending: bool = True  # every record so far was at least as new as the one before
    misplaced: bool = False  # a record came again where pages kept in one order cannot repeat it
    last_us: Optional[int] = None  # created_at of the last record read
    oldest_us: Optional[int] = None


def _fingerprint(items: List[Any]) -> str:
    h = hashlib.sha256()
    for item in (items[0], items[-1]):
        h.update(ascii_text(item).encode("ascii"))  # any item: hostile ones are quarantined later
    h.update(str(len(items)).encode())
    return h.hexdigest()


def iter_pages(
    fetch: Callable[[Optional[int], Optional[int]], List[Any]],
    limit: Optional[int],
    max_pages: int,
    outcome: PageOutcome,
) -> Iterator[List[Any]]:
    """Yield pages from ``fetch(limit, offset)`` until the data ends, from ``outcome.start_offset``.

    ``limit`` None means the service does not page: one request. The end is an empty page, a page
    longer than ``limit`` (the service ignores paging: that was everything), a page that brings no
    record new to this pass (as the reader reports in ``outcome.added``; without a reader, a page
    that repeats the previous one), or a short page. A short page of 25, 50 or 100 records might be
    the service's own page cap (25 is the documented default), so one more request confirms it
    rather than risk stopping early.
    """
    offset = outcome.start_offset
    previous: Optional[List[Any]] = None  # the page before, while no reader reports ``added``
    while outcome.pages < max_pages:
        items = fetch(limit, offset if limit is not None else None)
        outcome.pages += 1
        if not items:
            outcome.reason = "empty page"
            return
        # Fingerprints only once there are two pages to compare: most reads are one page.
        if previous is not None and outcome.added is None and _fingerprint(items) == _fingerprint(previous):
            outcome.reason = "repeated page"
            return
        previous = items
        outcome.items += len(items)
        outcome.page_offset = offset
        yield items
        if limit is None:
            outcome.reason = "single response"
            return
        if len(items) > limit:
            outcome.reason = "page longer than the limit asked (the service ignores paging)"
            return
        if outcome.added == 0:
            outcome.reason = "page brought no new record (the service ignores offset)"
            return
        if not may_hold_more(items, limit):
            outcome.reason = "short page"
            return
        offset += len(items)
    outcome.truncated = True
    outcome.reason = f"page cap of {max_pages} reached"


def pages_to_ceiling(
    fetch: Callable[[Optional[int], Optional[int]], List[Any]],
    limit: Optional[int],
    max_pages: int,
    outcome: PageOutcome,
) -> Iterator[List[Any]]:
    """``iter_pages``, where a 400 past the first page is the service's offset ceiling (one
    integration saw 9,900): the pages read so far stand and the pass ends truncated there."""
    try:
        yield from iter_pages(fetch, limit, max_pages, outcome)
    except ApiError as exc:
        if exc.status != 400 or outcome.pages == 0:
            raise
        outcome.truncated = True
        outcome.reason = f"service refused offset {outcome.items}"
