"""The org-wide index (DESIGN §4, Scheduling): where a name-less audits query is honoured, a run
first asks it which streams hold records newer than the last read, polls those first, and treats
every other stream of that object type as a backstop, revisited within ``FORWARDER_INDEX_REVISIT``
(48 hours at 5 minutes: 1,000 streams cost under two polls a run).

The index only chooses which streams a run polls: records are still read, shipped and committed by
their streams, so no answer, true or false, can move a watermark past a record. What a wrong answer
can cost is freshness, and it is bounded and noticed:

* probed first (``api.orgwide.probe_org_wide``: cross-checked against per-stream reads); the verdict
  is kept in the scheduler document, and one that is not "honoured" is probed again after
  ``PROBE_AGAIN_S``, or when the probe could not tell (an organization too quiet to show it, a
  failure) after ``UNPROVEN_INTERVALS`` runs, or on the run after one in which two streams of its
  type delivered records (``active``);
* each run reads it from the cursor the last read left (records newer than it); an answer that is
  refused (a 4xx), holds records of no trail of its type, or repeats a page (offset ignored: the rest
  is unreadable) demotes it; one cut by the page cap and not oldest-first is not used this run;
* cross-checked again on every per-stream read: a stream that delivers a record the index should
  have named (created after the index was first trusted and ``LATE_S`` before the read, not in the
  answer, the stream neither new nor left unread by an earlier run) shows the index lies, and it is
  demoted. Then the run and the next ones poll as without it, and the streams' usual revisit bound
  holds again at once (those past it are overdue): the backstop reads them within
  ``FORWARDER_INDEX_REVISIT`` meanwhile;
* a stream the index named that a run left unread (its budget, a failure, a pass cut short) stays
  named (``Book.pending``) until it is read.

It is also a source: the answer's records are shipped by an org-wide stream of their object type
(``ORG_NAME``: ``user/*``, ``domain/*``, with a state of its own, read by ``IndexSource`` from the
answer, no call), so the streams it names need not be read in the same run. Their own polls come
within the look-back window (``hints.due_within``), while the tenant's index of delivered ids still
holds what was shipped, so they skip those copies and move their watermarks, and read whatever the
answer lacked: no answer, true or false, moves a stream's watermark past a record it did not read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Generator, List, Mapping, Optional, Sequence, Set

from ..api.client import ApiClient
from ..api.orgwide import Changes, changed_since, covered_until, holders, probe_org_wide
from ..errors import ApiError
from ..reading.pages import Feedback, ReadEnd
from ..reading.pass_ import RecordSource
from ..records import AuditRecord, event_id
from ..streams import Stream
from .marks import Book, IndexMark, Marks
from .policy import Policy
from .priority import RunPlan, plan_run

log = logging.getLogger(__name__)

PROBE_AGAIN_S = 6 * 3600  # a query not honoured (refused, wrong, lying) is probed again this often
UNPROVEN_INTERVALS = 10  # one the probe could not tell, after this many schedule intervals
# Records reach the API up to this late after their created_at (and clocks differ by as much): an
# answer is held to the records created this long before it was asked, and the next read asks again.
LATE_S = 120
ORG_NAME = "*"  # the org-wide stream's name: no user or domain is called that


@dataclass(frozen=True)
class IndexRead:
    """This run's read of one object type's index: the span it answers for, and its records' ids."""

    since_us: int
    until_us: int  # every record of a trail created in (trusted_us, until_us] was in an answer
    trusted_us: int
    ids: Set[str]


@dataclass
class Hints:
    """What the index told this run."""

    named: List[str] = field(default_factory=list)  # stream keys holding undelivered records
    reads: Dict[str, IndexRead] = field(default_factory=dict)  # object types it is used for
    # object type -> its answer's records that planned streams return, not delivered yet
    answers: Dict[str, List[Any]] = field(default_factory=dict)
    sourced: Dict[str, str] = field(default_factory=dict)  # named from an answer -> its object type
    actors: Set[str] = field(default_factory=set)  # users its records name that have no stream
    calls: int = 0  # requests spent on it (probes included)


def consult(
    client: ApiClient,
    planned: Sequence[Stream],
    book: Book,
    now_us: int,
    *,
    delivered: Callable[[str], bool],
    page_limit: int,
    max_pages: int,
    window_s: int,
    probe_since_us: int,
    interval_s: float,
) -> Hints:
    """Probe (when due) and read the index of every object type ``planned`` holds; ``book.orgwide``
    is updated. ``delivered(event_id)``: the record is in the tenant's index of delivered ids, so it
    names no stream; ``interval_s``: the schedule's."""
    hints = Hints()
    keys: Dict[str, List[Stream]] = {}  # object type/name: its planned streams (a filter each)
    for stream in planned:
        keys.setdefault(f"{stream.object_type}/{stream.name.lower()}", []).append(stream)
    before = client.requests_sent
    counts: Dict[str, int] = {}
    for stream in planned:
        counts[stream.object_type] = counts.get(stream.object_type, 0) + 1
    # One stream of a type: nothing to choose among, and nothing a probe could prove it by.
    for object_type in sorted(kind for kind, count in counts.items() if count >= 2):
        mark = _probed(
            client, object_type, planned, book, now_us // 1_000_000, page_limit, probe_since_us, interval_s
        )
        if not mark.honoured:
            continue
        since = mark.cursor_us if mark.cursor_us is not None else now_us - window_s * 1_000_000
        try:
            changes = changed_since(client, object_type, since, page_limit=page_limit, max_pages=max_pages)
        except ApiError as exc:
            if exc.status is not None and 400 <= exc.status < 500:
                _demote(book, object_type, now_us, f"refused ({exc})")
            else:  # unknown this run: the streams are polled as without it
                log.warning("org-wide index not read: streams polled one by one", extra={"error": str(exc)})
            continue
        wrong = _wrong(changes)
        if wrong:
            _demote(book, object_type, now_us, wrong)
            continue
        covered = covered_until(changes)
        if covered is None:
            log.warning(
                "org-wide index cut by FORWARDER_MAX_PAGES and not oldest-first: streams polled one by one",
                extra={"object_type": object_type},
            )
            continue
        until = max(since, min(covered, now_us - LATE_S * 1_000_000))
        trusted = mark.trusted_us if mark.trusted_us is not None else since
        ids = {event_id(raw) for raw in changes.records}
        hints.reads[object_type] = IndexRead(since, until, trusted, ids)
        book.orgwide[object_type] = replace(mark, cursor_us=until, trusted_us=trusted)
        shipped = hints.answers.setdefault(object_type, [])
        for raw in changes.records:
            found = [] if delivered(event_id(raw)) else _name(raw, keys, hints)
            if found:  # a record no planned stream returns (a filter, an unlisted user) is not shipped
                shipped.append(raw)
                for key in found:
                    hints.sourced.setdefault(key, object_type)
    planned_keys = {s.key for s in planned}
    for key in book.pending:
        if key in planned_keys and key not in hints.named:
            hints.named.append(key)
    hints.calls = client.requests_sent - before
    return hints


def _probed(
    client: ApiClient,
    object_type: str,
    planned: Sequence[Stream],
    book: Book,
    now_s: int,
    page_limit: int,
    since_us: int,
    interval_s: float,
) -> IndexMark:
    mark = book.orgwide.get(object_type)
    if mark is not None and (mark.honoured or now_s < mark.probe_at_s):
        return mark
    found = probe_org_wide(client, object_type, planned, since_us=since_us, page_limit=page_limit)
    log.info("org-wide index probed", extra={"finding": found.line()})
    again = PROBE_AGAIN_S if found.conclusive else UNPROVEN_INTERVALS * interval_s
    mark = book.orgwide[object_type] = IndexMark(found.honoured, int(now_s + again))
    return mark


def _wrong(changes: Changes) -> Optional[str]:
    if changes.stray:
        return f"its answer held {changes.stray} records of no trail of its type"
    if changes.repeated:
        return "a page past the first repeated the records before it (offset ignored)"
    return None


def _name(raw: Mapping[str, object], keys: Mapping[str, List[Stream]], hints: Hints) -> List[str]:
    """The first planned streams whose query returns ``raw`` (its actor's, else its domain's) are
    named: one poll ships it, the other stream skips its copy when it comes by."""
    action = raw.get("filterable_action")
    for object_type, name in holders(raw):
        found = [
            s.key
            for s in keys.get(f"{object_type}/{name}", ())
            if s.filter is None or (isinstance(action, str) and action.startswith(s.filter))
        ]
        if found:
            hints.named.extend(k for k in found if k not in hints.named)
            return found
        if object_type == "user" and "@" in name:
            hints.actors.add(name)
    return []


def _demote(book: Book, object_type: str, now_us: int, why: str) -> None:
    log.warning(
        "org-wide index not used any more: streams are polled one by one within their revisit bounds",
        extra={"object_type": object_type, "reason": why},
    )
    book.orgwide[object_type] = IndexMark(False, now_us // 1_000_000 + PROBE_AGAIN_S)


def unexpected(
    hints: Hints, stream: Stream, records: Sequence[AuditRecord], pending: Sequence[str], first: bool
) -> int:
    """How many of the records ``stream`` delivers its object type's index should have named and
    did not (``first``: the stream's first poll; ``pending``: streams named and not read yet, the
    stream itself or another holding the record)."""
    read = hints.reads.get(stream.object_type)
    if read is None or first or stream.key in pending:
        return 0
    named = {tuple(key.split("/", 2)[:2]) for key in pending}
    return sum(
        1
        for r in records
        if read.trusted_us < r.ts_us <= read.until_us
        and r.event_id not in read.ids
        and not any(holder in named for holder in holders(r.raw))
    )


def active(book: Book, delivering: Mapping[str, int], now_s: int, interval_s: float) -> None:
    """``delivering``: per object type, the streams that delivered records in a run. A query the
    probe could not tell is probed again on the next run once two streams show records."""
    for object_type, count in delivering.items():
        mark = book.orgwide.get(object_type)
        soon = mark is not None and mark.probe_at_s - now_s <= UNPROVEN_INTERVALS * interval_s
        if count >= 2 and mark is not None and not mark.honoured and soon:
            book.orgwide[object_type] = replace(mark, probe_at_s=now_s)


def standing(book: Book) -> Hints:
    """What the index's last reads told, for a run that did not read it (a fan-out worker, handed
    the streams the planner chose from it): every record of a trail created after it was trusted
    and up to its cursor was in an answer; the streams those named are ``book.pending``."""
    hints = Hints()
    for object_type, mark in book.orgwide.items():
        if mark.honoured and mark.cursor_us is not None and mark.trusted_us is not None:
            hints.reads[object_type] = IndexRead(mark.cursor_us, mark.cursor_us, mark.trusted_us, set())
    return hints


def lied(book: Book, object_type: str, count: int, now_us: int) -> None:
    _demote(book, object_type, now_us, f"a stream delivered {count} records its answers lacked")


def backstop(policy: Policy, hints: Hints) -> Policy:
    """The policy of a run that read the index: the streams of each object type it was read for are
    backstops, within ``FORWARDER_INDEX_REVISIT``. A run that did not read it (demoted, or not read
    this run) plans them by their usual bounds, so those hold again at once."""
    if "user" in hints.reads:
        policy = replace(policy, cold_revisit_s=policy.index_revisit_s)
    if "domain" in hints.reads:
        policy = replace(policy, domain_revisit_s=policy.index_revisit_s)
    return policy


def plan_indexed(
    streams: Sequence[Stream],
    marks: Mapping[str, Marks],
    now_s: float,
    policy: Policy,
    hints: Hints,
    cadence_s: Optional[float] = None,
) -> RunPlan:
    """The org-wide streams shipping the answers first, then the streams the index named that no
    answer holds records of (left unread by an earlier run), then the plan of every other stream
    with those of an indexed object type as backstops: none hot (the index says where records are)."""
    indexed = set(hints.reads)
    quiet = {
        key: replace(mark, delivered_s=None) if key.partition("/")[0] in indexed else mark
        for key, mark in marks.items()
    }
    base = plan_run(streams, quiet, now_s, backstop(policy, hints), cadence_s)
    by_key = {s.key: s for s in streams}
    sources = [Stream(kind, ORG_NAME) for kind, records in sorted(hints.answers.items()) if records]
    unread = [by_key[k] for k in hints.named if k in by_key and k not in hints.sourced]
    first = {s.key for s in unread}  # a sourced stream keeps its place: due (a first read, its bound) or not
    order = sources + unread + [s for s in base.order if s.key not in first]
    return RunPlan(order, [s for s in base.not_due if s.key not in first], base.needed, len(unread))


class IndexSource:
    """The run's record source: an org-wide stream's page is its answer (no call; what it holds
    older than the stream's watermark is not new to it, unless inside its look-back window); every
    other stream's pages come from ``inner``."""

    def __init__(self, inner: RecordSource, answers: Mapping[str, List[Any]]) -> None:
        self.inner, self.answers = inner, answers

    def pages(
        self, stream: Stream, start_us: Optional[int], start_offset: int
    ) -> Generator[Any, Optional[Feedback], Optional[ReadEnd]]:
        if stream.name != ORG_NAME:
            return (yield from self.inner.pages(stream, start_us, start_offset))
        page = list(self.answers.get(stream.object_type, []))
        yield page
        return ReadEnd(items=len(page), strategy="org-wide", reason="the org-wide answer")
