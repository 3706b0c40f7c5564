"""What the audits endpoint honours (paging, order, start_date, end_date), found with a few small
requests, for ``audit-forwarder check``: users see which strategy a run will use before it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from ..api.bounds import SECOND, bound, record_time
from ..api.client import AUDITS_PATH, ApiClient
from ..jsonutil import canonical
from ..streams import Stream
from .strategy import ASCENDING, FULL_SCAN, Honoured, strategy

_PROBE_LIMIT = 5


@dataclass
class Findings:
    stream: str
    records: int  # records the first page held
    paging: str  # "yes", "no (limit ignored)", "no (offset ignored)", "unknown"
    order: str  # "oldest-first", "newest-first", "none", "refused", "unknown"
    start_date: str  # "yes", "no", "refused", "unknown"
    end_date: str
    strategy: str  # the strategy a run starts with, as TrailReader decides it, and what changes it

    def lines(self) -> List[str]:
        return [
            f"service behaviour ({self.stream}, {self.records} records probed): paging {self.paging}, "
            f"order {self.order}, start_date {self.start_date}, end_date {self.end_date}",
            f"strategy: {self.strategy}",
        ]


def _get(client: ApiClient, stream: Stream, optional: Dict[str, Any], offset: int = 0) -> List[Any]:
    return client.audits(stream, optional, _PROBE_LIMIT, offset)


def _times(items: List[Any]) -> List[int]:
    return [t for t in map(record_time, items) if t is not None]


def _order(times: List[int]) -> str:
    if len(set(times)) < 2:
        return "unknown"
    if all(a <= b for a, b in zip(times, times[1:])):
        return "oldest-first"
    if all(a >= b for a, b in zip(times, times[1:])):
        return "newest-first"
    return "none"


def _bound_honoured(client: ApiClient, stream: Stream, name: str, pivot: int, keeps: Any) -> str:
    """Ask from (or up to) ``pivot``, in the order that would show an ignored bound first."""
    up = name == "end_date"
    items = _get(
        client, stream, {"sort": "created_at DESC" if up else "created_at ASC", name: bound(pivot, up=up)}
    )
    if not client.sends(AUDITS_PATH, name):
        return "refused"
    return "yes" if all(keeps(t) for t in _times(items)) else "no"


def probe(
    client: ApiClient, streams: Sequence[Stream], *, page_limit: int, tries: int = 5
) -> Optional[Findings]:
    """Probe the first of ``streams`` (up to ``tries``) whose trail holds records; None if none does.
    ``page_limit``: the run's page size (FORWARDER_PAGE_LIMIT), which decides when a run sees an order."""
    for stream in streams[:tries]:
        first = _get(client, stream, {"sort": "created_at ASC"})
        if first:
            return _probe(client, stream, first, page_limit)
    return None


def _probe(client: ApiClient, stream: Stream, first: List[Any], page_limit: int) -> Findings:
    sorted_sent = client.sends(AUDITS_PATH, "sort")
    fresh: List[Any] = []
    if len(first) > _PROBE_LIMIT:
        paging, seen = "no (limit ignored)", first
    elif len(first) < _PROBE_LIMIT:
        paging, seen = "unknown", first
    else:
        second = _get(client, stream, {"sort": "created_at ASC"}, offset=_PROBE_LIMIT)
        ids = {canonical(r) for r in first}
        fresh = [r for r in second if canonical(r) not in ids]
        paging = (
            "yes"
            if second and len(fresh) == len(second)
            else ("no (offset ignored)" if second else "unknown")
        )
        seen = first + fresh
    times = _times(seen)
    given = _order(_times(first) + _times(fresh))  # as asked, or as the service lists them unasked
    order = given if sorted_sent else "refused"
    start = end = "unknown"
    if len(set(times)) >= 2:
        pivot = sorted(times)[len(times) // 2]
        start = _bound_honoured(client, stream, "start_date", pivot, lambda t: t >= pivot - 2 * SECOND)
        end = _bound_honoured(client, stream, "end_date", pivot, lambda t: t <= pivot + 2 * SECOND)
    if order == "refused":
        way = _refused_sort(client, start, end, paging, given, page_limit)
    else:
        way = _described(_strategy(client, _known(order, "oldest-first"), start, end), paging)
    return Findings(stream.key, len(first), paging, order, start, end, way)


def _known(finding: str, yes: str) -> Optional[bool]:
    return None if finding == "unknown" else finding == yes


def _strategy(client: ApiClient, order: Optional[bool], start: str, end: str) -> str:
    """What ``trail.strategy`` makes of the findings, as a run would have learnt them: an order not
    seen (too few distinct times) is still unknown, so a run asks oldest-first."""
    starts, ends = _known(start, "yes"), _known(end, "yes")
    honoured = Honoured(
        order=order, start_date=starts, time_bounds=False if False in (starts, ends) else ends
    )
    # Every pass has a start: the watermark, or the look-back floor on a stream's first run.
    return strategy(honoured, bounded=True, sends_start=client.sends(AUDITS_PATH, "start_date"))


def _refused_sort(client: ApiClient, start: str, end: str, paging: str, given: str, page_limit: int) -> str:
    """A run cannot ask for an order, so it reads pages as they come, as if oldest-first, and learns
    otherwise only from the first page of a pass that is full (an unpaged answer never is)."""
    way = _strategy(client, None, start, end)
    if paging == "no (limit ignored)":
        return f"{way} (sort refused: every answer is the whole trail, read as the service gives it)"
    seen = {"unknown": "", "none": " (in no order in this probe)"}.get(given, f" ({given} in this probe)")
    then = _strategy(client, False, start, end)
    return (
        f"{way} (sort refused: the run reads pages as the service gives them{seen} and switches to "
        f"{then} if a full page ({page_limit} records) shows they are not oldest-first)"
    )


def _described(way: str, paging: str) -> str:
    if way == ASCENDING and paging == "no (offset ignored)":
        return way + " (offset ignored: each page asks from the last created_at read)"
    if way == FULL_SCAN:
        return way + " (every pass reads the whole trail)"
    return way
