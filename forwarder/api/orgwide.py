"""Org-wide audits queries: ``object_type=user`` or ``domain`` without ``name``.

The spec leaves ``name`` optional or not, and a service may refuse the query (400), answer nothing,
or answer something else (one trail, records of the other object type). ``probe_org_wide`` finds
out, cross-checking the answer against per-stream reads; only where it is honoured does
``changed_since`` say which streams hold records newer than a time, with the records, in one or a few
calls instead of one per stream.

The query never gives up a parameter on a 400 as the per-stream reads do (a refusal of the query
must not stop ``sort`` or ``start_date`` for every stream for the rest of the run); it leaves out
those the per-stream reads have found refused.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

from ..domains import to_unicode_domain
from ..errors import ApiError
from ..reading.pages import may_hold_more
from ..records import event_id
from ..streams import Stream
from .bounds import bound, record_time
from .client import AUDITS_PATH, ApiClient
from .envelope import extract_items

StreamKey = Tuple[str, str]  # (object_type, name lowercased; a domain in its Unicode form)
_CHECKS = 3  # streams read one by one to cross-check an answer: those it names, and as many others


def holders(raw: Any) -> List[StreamKey]:
    """The streams whose trails hold a record: its actor's, and for a domain action the domain's."""
    if not isinstance(raw, dict):
        return []
    keys: List[StreamKey] = []
    actor, target, action = raw.get("user"), raw.get("object"), raw.get("filterable_action")
    if isinstance(actor, str) and actor.strip():
        keys.append(("user", actor.strip().lower()))
    if isinstance(action, str) and not action.startswith("user.") and isinstance(target, str):
        with contextlib.suppress(UnicodeError, ValueError):  # not a domain name: no domain stream
            keys.append(("domain", to_unicode_domain(target)))
    return keys


def _in_scope(object_type: str, raw: Any) -> bool:
    """Whether a record can be in a trail of ``object_type`` at all."""
    return any(kind == object_type for kind, _ in holders(raw))


@dataclass
class Changes:
    """What a name-less query answered since a time, kept to the records in its scope and newer."""

    records: List[Any] = field(default_factory=list)  # newer than ``since``, in the order served
    complete: bool = True  # False: the page cap stopped the read before the end
    repeated: bool = False  # a page past the first brought nothing new: the service ignores offset
    stray: int = 0  # records dropped: of the other object type, or without a usable created_at
    calls: int = 0

    @property
    def keys(self) -> Dict[StreamKey, int]:
        """The streams holding the records, with how many each holds."""
        counts: Dict[StreamKey, int] = {}
        for raw in self.records:
            for key in holders(raw):
                counts[key] = counts.get(key, 0) + 1
        return counts


def changed_since(
    client: ApiClient, object_type: str, since_us: int, *, page_limit: int, max_pages: int
) -> Changes:
    """The records of every ``object_type`` trail newer than ``since_us``, by a name-less query
    read oldest-first page by page (with the parameters the per-stream reads have not found
    refused); raises ApiError when the service refuses it. Use it only where ``probe_org_wide``
    found it honoured: a service may answer it with anything."""
    wanted: Dict[str, Union[str, int]] = {"start_date": bound(since_us), "sort": "created_at ASC"}
    wanted["limit"] = page_limit
    params = {"object_type": object_type, **{k: v for k, v in wanted.items() if client.sends(AUDITS_PATH, k)}}
    paged = "limit" in params and client.sends(AUDITS_PATH, "offset")
    offset = 0
    changes = Changes()
    seen: Set[str] = set()
    while changes.calls < max_pages:
        at = {"offset": offset} if paged else {}
        page = extract_items(client.get_json(AUDITS_PATH, {**params, **at}), "audits")
        changes.calls += 1
        changes.stray += sum(1 for raw in page if not isinstance(raw, dict))
        fresh = {event_id(raw): raw for raw in page if isinstance(raw, dict)}
        fresh = {key: raw for key, raw in fresh.items() if key not in seen}
        if not fresh:  # the end, or the same page again (offset ignored)
            changes.repeated = bool(page)
            return changes
        seen.update(fresh)
        for raw in fresh.values():
            created = record_time(raw)
            if created is None or not _in_scope(object_type, raw):
                changes.stray += 1
            elif created > since_us:
                changes.records.append(raw)
        if len(page) > page_limit or not may_hold_more(page, page_limit):
            return changes
        if not paged:  # as long as a default page size: maybe not the whole answer
            break
        offset += len(page)
    changes.complete = False
    return changes


@dataclass(frozen=True)
class OrgWide:
    """What ``check`` prints about a name-less query, and whether a run may use it."""

    object_type: str
    honoured: bool
    finding: str
    conclusive: bool = True  # False: unproven or unknown (too few records, a failure): ask again soon

    def line(self) -> str:
        return f"org-wide {self.object_type}: {self.finding} (a query without a name)"


def probe_org_wide(
    client: ApiClient,
    object_type: str,
    streams: Sequence[Stream],
    *,
    since_us: int,
    page_limit: int,
    max_pages: int = 3,
) -> OrgWide:
    """Ask the name-less query since ``since_us`` and cross-check it against per-stream reads of up
    to three streams it names and three planned ones it does not. Honoured only when it names at
    least two streams (one trail looks the same), each checked stream's records in the span it
    covers are all in it, and it holds nothing of the other object type."""

    def verdict(honoured: bool, finding: str) -> OrgWide:
        return OrgWide(object_type, honoured, finding, not finding.startswith(("unproven", "unknown")))

    try:
        changes = changed_since(client, object_type, since_us, page_limit=page_limit, max_pages=max_pages)
    except ApiError as exc:
        if exc.status is not None and 400 <= exc.status < 500:
            return verdict(False, f"not honoured (refused: {exc})")
        return verdict(False, f"unknown ({exc})")
    if changes.stray:
        return verdict(
            False, f"not honoured (the answer holds {changes.stray} records of no {object_type} trail)"
        )
    since = bound(since_us)
    held = changes.keys
    named = [k for k in held if k[0] == object_type]
    planned = {(s.object_type, s.name.lower()): s for s in streams if s.filter is None}
    others = [s for key, s in planned.items() if key[0] == object_type and key not in held]
    # A named stream is read as planned (a service may match names case-sensitively).
    checked = [planned.get(key, Stream(*key)) for key in named[:_CHECKS]] + _spread(others, _CHECKS)
    until = covered_until(changes)
    answered = {event_id(raw) for raw in changes.records}
    for stream in checked:
        truth = _read(client, stream, since_us, page_limit)
        missing = [raw for raw in truth if _before(raw, until) and event_id(raw) not in answered]
        if missing:
            what = "is empty" if not changes.records else f"names {len(named)} streams"
            return verdict(
                False,
                f"not honoured (the answer since {since} {what} but lacks {len(missing)} records "
                f"of {stream.key})",
            )
    if len(named) < 2:
        return verdict(
            False,
            f"unproven ({len(changes.records)} records of {len(named)} streams since {since}: "
            "one stream's trail would look the same)",
        )
    if until is None and not changes.complete:
        return verdict(False, "unproven (the answer is not oldest-first: the span it covers is unknown)")
    pages = "" if changes.complete else f", first {changes.calls} pages"
    return verdict(
        True,
        f"honoured ({len(changes.records)} records of {len(named)} streams since {since}{pages}, "
        f"cross-checked against {len(checked)} streams)",
    )


def _spread(streams: Sequence[Stream], n: int) -> List[Stream]:
    """Up to ``n`` streams spread over the list (the first ones may all be alike)."""
    if len(streams) <= n:
        return list(streams)
    step = len(streams) / n
    return [streams[int(i * step)] for i in range(n)]


def covered_until(changes: Changes) -> Optional[int]:
    """The newest created_at the answer covers whole: everything when complete; when cut by the
    page cap, up to (not at) its last record's time if it came oldest-first; else None."""
    if changes.complete:
        return 2**63
    times = [t for t in map(record_time, changes.records) if t is not None]
    if times and all(a <= b for a, b in zip(times, times[1:])):
        return times[-1] - 1
    return None


def _before(raw: Any, until: Optional[int]) -> bool:
    created = record_time(raw)
    return until is not None and created is not None and created <= until


def _read(client: ApiClient, stream: Stream, since_us: int, page_limit: int) -> List[Any]:
    """One stream's records newer than ``since_us``, as far as its first page goes: each of them
    that the org-wide answer covers must be in it, whatever order the page came in."""
    page = client.audits(stream, {"sort": "created_at ASC", "start_date": bound(since_us)}, page_limit, 0)
    return [raw for raw in page if (record_time(raw) or 0) > since_us]
