"""Stream planning and the ownership of records that two streams both return (DESIGN §2)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence

from .domains import to_unicode_domain
from .records import AuditRecord

log = logging.getLogger(__name__)

# The API keeps 13 months of domain history. Thirteen calendar months are at least 393 days; three
# days less leaves room for clock skew and for records that fall out of the history mid-run, which
# the user stream then keeps rather than risk both streams skipping them.
DOMAIN_HISTORY_S = 390 * 86400


@dataclass(frozen=True, order=True)
class Stream:
    """One query of the audits endpoint. ``name`` is sent as given (a service may match it
    case-sensitively); the stream's identity, ``key``, is case-insensitive."""

    object_type: str
    name: str
    filter: Optional[str] = None

    @property
    def key(self) -> str:
        base = f"{self.object_type}/{self.name.lower()}"
        return f"{base}/{self.filter}" if self.filter else base

    def matches(self, action: str) -> bool:
        return self.filter is None or action.startswith(self.filter)


def user_email(item: Any) -> Optional[str]:
    """The email of one element of the users endpoint: a string, or an object with an email field."""
    if isinstance(item, str):
        return item.strip() or None
    if isinstance(item, dict):
        for key in ("email", "email_address", "user_email", "username", "login"):
            value = item.get(key)
            if isinstance(value, str) and "@" in value:
                return value.strip()
    return None


def domain_name(item: Any) -> Optional[str]:
    """The name of one element of a domains list: a string, or an object with a name field."""
    if isinstance(item, str):
        return item.strip() or None
    if isinstance(item, dict):
        for key in ("name", "domain", "domain_name"):
            value = item.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def filters_for(object_type: str, filters: Sequence[str]) -> List[Optional[str]]:
    """The filters that make sense for an object type; no filter at all when none is configured."""
    if not filters:
        return [None]
    other = "domain." if object_type == "user" else "user."
    chosen: List[Optional[str]] = [f for f in filters if not f.startswith(other)]
    return chosen


def plan_streams(
    object_types: Sequence[str], users: Iterable[str], domains: Iterable[str], filters: Sequence[str]
) -> List[Stream]:
    """Every (object_type, name, filter) to pull, deduplicated case-insensitively (the first
    spelling wins), in a stable order."""
    names = {"user": _first_spellings(users), "domain": _first_spellings(domains)}
    streams = {
        Stream(object_type, name, flt)
        for object_type in object_types
        for name in names.get(object_type, [])
        for flt in filters_for(object_type, filters)
    }
    return sorted(streams, key=lambda s: (s.object_type, s.name.lower(), s.filter or ""))


def _first_spellings(names: Iterable[str]) -> List[str]:
    return list({n.lower(): n for n in reversed([n for n in names if n])}.values())


class Ownership:
    """Decides which one stream ships a record that several streams return (DESIGN §2).

    A ``domain.*`` record inside the domain history belongs to its domain's stream when that stream
    is planned and its filter selects the record. Every other record (older domain records, and
    actions such as ``dkim_record_source.update`` that a domain trail returns too) belongs to its
    actor's user stream when that is planned and selects it. Otherwise the stream that fetched it
    ships it. Every stream applies the same rule, so exactly one copy is shipped.
    """

    def __init__(self, plan: Sequence[Stream], now_s: float) -> None:
        # Streams by lowercased name: one lookup per record, whatever the number of streams.
        self._domain_streams: Dict[str, List[Stream]] = {}
        self._user_streams: Dict[str, List[Stream]] = {}
        for stream in plan:
            by_name = self._domain_streams if stream.object_type == "domain" else self._user_streams
            by_name.setdefault(stream.name.lower(), []).append(stream)
        self._history_floor_us = int((now_s - DOMAIN_HISTORY_S) * 1_000_000)

    def owner(self, record: AuditRecord, fetched_by: Stream) -> Stream:
        action = record.action
        if action.startswith("domain.") and record.ts_us >= self._history_floor_us:
            try:
                domain = to_unicode_domain(record.object)
            except (UnicodeError, ValueError):
                domain = ""
            for stream in self._domain_streams.get(domain, ()):
                if stream.matches(action):
                    return stream
        for stream in self._user_streams.get(record.actor.lower(), ()):
            if stream.matches(action):
                return stream
        return fetched_by

    def keeps(self, stream: Stream, record: AuditRecord) -> bool:
        return self.owner(record, stream) == stream
