"""Stream planning: which queries of the audits endpoint a run makes (DESIGN §2). Which stream ships a
record that several return is delivery/claims.py's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, List, Optional, Sequence


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
