"""What the service was seen to honour, and the read strategy that follows from it.

* ``ascending+start_date``: pages come oldest-first, so a pass may stop once it holds its cap and the
  next pass resumes from the new watermark; an offset ceiling, or a service that ignores offset
  (every page is the first page again), re-anchors ``start_date`` at the last ``created_at`` read.
* ``offset``: oldest-first without ``start_date``: the next pass resumes at the offset it stopped at.
* ``time-windows``: no order, but ``start_date``/``end_date`` are honoured: the trail is read window
  by window, each sized to fit one page, oldest window first.
* ``full-scan``: none of the above: every pass reads the whole trail (said in the run report).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..api.bounds import SECOND
from .pages import Tally

ASCENDING, OFFSET, WINDOWS, FULL_SCAN = "ascending+start_date", "offset", "time-windows", "full-scan"


@dataclass
class Honoured:
    """What the service was seen to honour this run; None while unknown."""

    order: Optional[bool] = None  # sort=created_at ASC
    start_date: Optional[bool] = None
    time_bounds: Optional[bool] = None  # start_date and end_date together, as filters
    paging: Optional[bool] = None  # limit and offset
    offset: Optional[bool] = None  # False: every offset answers the first page (limit honoured)


def strategy(honoured: Honoured, bounded: bool, sends_start: bool) -> str:
    """How a pass reads a stream, from what the service was seen to honour so far: oldest-first
    until pages show another order. ``bounded``: the pass has a start; ``sends_start``: the client
    still sends start_date (the service has not refused it)."""
    if honoured.order is not False:
        return ASCENDING if bounded and honoured.start_date is not False and sends_start else OFFSET
    if bounded and honoured.time_bounds is not False:
        return WINDOWS
    return FULL_SCAN


def learn(h: Honoured, tally: Tally, start_us: Optional[int], sends_start: bool) -> None:
    """What a pass showed about the service, for the passes and streams after it."""
    if tally.sorted_request and tally.pages and not tally.ascending:
        h.order = False
    elif tally.sorted_request and tally.order_shown:
        h.order = True
    if start_us is not None and tally.oldest_us is not None:
        if tally.oldest_us < start_us - 2 * SECOND:
            h.start_date = False
        elif h.start_date is None and tally.strategy != OFFSET:
            h.start_date = True
    if not sends_start:
        h.start_date = h.time_bounds = False
    if h.start_date is False:
        h.time_bounds = False
    if tally.reason.startswith("page longer"):
        h.paging = False
    elif tally.pages > 1 and h.paging is None:
        h.paging = True
