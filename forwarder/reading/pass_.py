"""The face of the read path: ``read_pass`` reads one pass of a stream and returns a ``Pass``.

A pass asks its source (``trail.TrailReader`` for the real API) for pages from a position, hands
each page to a ``Selector`` and the selector's feedback back to the source, until the source ends
its read. A source that learnt the pages were not what it asked (``ReadEnd.read_again``) is asked
again from the same position; the calls of every attempt count, the records of the last one only.
The caller ships ``Pass.records`` (oldest first), quarantines ``Pass.unplaceable`` and, unless the
pass is ``complete``, reads the next pass from ``Pass.next``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generator, List, Optional, Protocol, Tuple, Union

from ..errors import StreamFailed
from ..records import AuditRecord
from ..state.model import StreamState
from ..streams import Stream
from .pages import Feedback, Page, ReadEnd
from .select import Limits, Selector

# What a source's generator yields: a Page, or a bare list of raw records (a plain fake source).
Yielded = Union[Page, List[Any]]


class RecordSource(Protocol):
    def pages(
        self, stream: Stream, start_us: Optional[int], start_offset: int
    ) -> Generator[Any, Optional[Feedback], Optional[ReadEnd]]:
        """Pages of raw audit records of ``stream``; ``start_us`` is a hint the service may ignore,
        ``start_offset`` where offset paging resumes. It hears the reader's feedback (``send``) and
        returns how the read ended."""
        ...


@dataclass(frozen=True)
class Position:
    """Where a pass starts reading: a start_date hint and, for offset paging, the offset."""

    start_us: Optional[int]
    offset: int = 0


@dataclass(frozen=True)
class Pass:
    records: List[AuditRecord]  # the oldest new records, oldest first, at most the cap
    complete: bool  # nothing new is left in the range read: the stream is done for this run
    next: Optional[Position]  # where the next pass of this run starts, unless complete
    calls: int  # API calls, every attempt counted
    fetched: int  # records read (the last attempt)
    skipped: int  # records read that were not new or are another stream's
    late: int  # selected records older than the watermark: they reached the API late
    strategy: str
    truncated: bool  # the page cap or an offset ceiling stopped the read
    reason: str  # why the read ended
    unplaceable: List[Tuple[Any, str]] = field(default_factory=list)  # (raw record, why): to quarantine


def start_position(
    state: StreamState, floor_us: int, limits: Limits, reach_back_s: Optional[int] = None
) -> Position:
    """Where a run's first pass over a stream starts: the look-back floor on its first run, else the
    watermark minus ``reach_back_s``. By default that is the tie margin (``limits.tie_margin_s``):
    records sharing the watermark's second and records a little late; records later than that wait
    for a deep re-sweep, which a scheduler asks for with a longer reach (say the last day, every
    hour). Records a sweep finds that were delivered are known by id inside the look-back window
    (``limits.window_s``) and skipped; the new ones older than the watermark are counted late."""
    watermark = state.watermark_us
    if watermark is None:
        return Position(floor_us)
    if reach_back_s is None:
        # A watermark no delivered record is dated at was held at the clock (a record dated ahead
        # of it was delivered): the trail was read to some time before it, so the whole look-back
        # is read again, or the records after that time would hide behind the watermark.
        held = watermark not in state.seen.values()
        reach_back_s = limits.window_s if held else limits.tie_margin_s
    return Position(watermark - reach_back_s * 1_000_000)


def read_pass(
    source: RecordSource,
    stream: Stream,
    state: StreamState,
    limits: Limits,
    *,
    floor_us: int,
    keeps: Callable[[Stream, AuditRecord], bool],
    at: Optional[Position] = None,
    reach_back_s: Optional[int] = None,
    on_page: Callable[[int], None] = lambda fetched: None,
) -> Pass:
    """Read one pass of ``stream``: from ``at``, or (a run's first pass) from ``start_position`` with
    ``reach_back_s``. ``keeps(stream, record)`` says whether this stream may deliver a record;
    ``on_page`` hears the records read so far in the attempt, after each page (live progress).
    StreamFailed when the read cannot be trusted to have seen every older record."""
    at = at or start_position(state, floor_us, limits, reach_back_s)
    calls = 0
    while True:
        selector = Selector(stream, state, floor_us=floor_us, limits=limits, keeps=keeps)
        end = _drive(source.pages(stream, at.start_us, at.offset), selector, on_page)
        calls += end.calls
        if not end.read_again:
            break
    if end.truncated and not end.more and not selector.ascending:
        raise StreamFailed(
            f"{end.reason} before the end of the stream, and the service does not return "
            "records oldest-first, so older records may be unseen: nothing shipped "
            "(raise FORWARDER_MAX_PAGES)"
        )
    chosen = selector.result()
    complete = chosen.complete and not end.more
    following: Optional[Position] = None
    if not chosen.complete:
        # Cut off by the cap: every record older than the newest selected one was read, and the
        # rest lies at or after it, from ``resume_offset`` on in oldest-first pages.
        following = Position(chosen.records[-1].ts_us, chosen.resume_offset)
    elif end.more:  # the source stopped (page cap, windows left): it goes on where it stopped
        following = Position(end.resume_us, end.next_offset)
    return Pass(
        chosen.records,
        complete,
        following,
        calls,
        chosen.fetched,
        chosen.skipped,
        chosen.late,
        end.strategy,
        end.truncated,
        end.reason,
        chosen.unplaceable,
    )


def _drive(
    pages: Generator[Yielded, Optional[Feedback], Optional[ReadEnd]],
    selector: Selector,
    on_page: Callable[[int], None],
) -> ReadEnd:
    """Hand each page to ``selector`` and its feedback back to the source, until the source ends."""
    try:
        page = next(pages)
        while True:
            feedback = selector.take(page if isinstance(page, Page) else Page(list(page)))
            on_page(selector.fetched)
            page = pages.send(feedback)
            if feedback.enough:  # a source that reads on past ``enough`` is stopped here
                pages.close()
                return ReadEnd()
    except StopIteration as stop:
        return stop.value if isinstance(stop.value, ReadEnd) else ReadEnd()
