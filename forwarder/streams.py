"""Stream planning and the ownership of records that two streams both return (DESIGN §2)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable, List, Optional, Sequence

from .config import to_unicode_domain
from .records import AuditRecord

log = logging.getLogger(__name__)

# The API keeps 13 months of domain history. Thirteen calendar months are at least 393 days; three
# days less leaves room for clock skew and for records that fall out of the history mid-run, which
# the user stream then keeps rather than risk both streams skipping them.
DOMAIN_HISTORY_S = 390 * 86400


@dataclass(frozen=True, order=True)
class Stream:
    """One query of the audits endpoint."""

    object_type: str
    name: str
    filter: Optional[str] = None

    @property
    def key(self) -> str:
        base = f"{self.object_type}/{self.name}"
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
    """Every (object_type, name, filter) to pull, deduplicated case-insensitively, in a stable order."""
    streams = set()
    names = {
        "user": {u.lower() for u in users if u},
        "domain": {d.lower() for d in domains if d},
    }
    for object_type in object_types:
        for name in names.get(object_type, set()):
            for flt in filters_for(object_type, filters):
                streams.add(Stream(object_type, name, flt))
    return sorted(streams)


class Ownership:
    """Decides which one stream ships a record that several streams return (DESIGN §2).

    A ``domain.*`` record inside the domain history belongs to its domain's stream when that stream
    is planned and its filter selects the record. Every other record (older domain records, and
    actions such as ``dkim_record_source.update`` that a domain trail returns too) belongs to its
    actor's user stream when that is planned and selects it. Otherwise the stream that fetched it
    ships it. Every stream applies the same rule, so exactly one copy is shipped.
    """

    def __init__(self, plan: Sequence[Stream], now_s: float) -> None:
        self._domain_streams = [s for s in plan if s.object_type == "domain"]
        self._user_streams = [s for s in plan if s.object_type == "user"]
        self._history_floor_us = int((now_s - DOMAIN_HISTORY_S) * 1_000_000)

    def owner(self, record: AuditRecord, fetched_by: Stream) -> Stream:
        action = record.action
        if action.startswith("domain.") and record.ts_us >= self._history_floor_us:
            try:
                domain: Optional[str] = to_unicode_domain(record.object)
            except (UnicodeError, ValueError):
                domain = None
            for stream in self._domain_streams:
                if stream.name == domain and stream.matches(action):
                    return stream
        actor = record.actor.lower()
        for stream in self._user_streams:
            if stream.name == actor and stream.matches(action):
                return stream
        return fetched_by

    def keeps(self, stream: Stream, record: AuditRecord) -> bool:
        return self.owner(record, stream) == stream
