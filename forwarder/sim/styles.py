"""How the simulated service lists things: the reply shape (envelope or bare list), paging, which
parameters it honours or refuses, and the order of an audit trail. Each knob turns off one thing
``API-NOTES.md`` says the real service does, so tests can meet a service that ignores paging, order
or time bounds."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from .entities import Record
from .messages import BadRequest, Query, int_param, one, time_param

_AUDIT_PARAMS = frozenset({"object_type", "name", "filter"})
NAMELESS = ("refuse", "org-wide", "empty", "one-trail")


@dataclass
class ServiceStyle:
    style: str = "envelope"  # or "bare": a list without the envelope
    paging: bool = True
    default_limit: int = 25
    max_limit: int = 200
    honour_start_date: bool = True
    honour_sort: bool = True
    shuffle: bool = False  # a different order on every call, whatever sort asks (see unordered())
    case_sensitive_names: bool = False  # name matches the trail's spelling exactly
    strict_params: bool = False  # 400 on parameters (and token form fields) outside the spec
    takes_limit: bool = True  # False: pages are always default_limit long (strict: 400 on limit)
    max_offset: Optional[int] = None  # an offset ceiling: 400 beyond it
    ignore_offset: bool = False  # limit honoured, offset not: every page is the first page again
    # An audits query without ``name`` (the spec leaves it optional or not): "refuse" (400),
    # "org-wide" (every user's or every domain's records), "empty" (an empty list), "one-trail"
    # (the first user's or domain's trail, as a service that ignores the missing name wrongly).
    nameless: str = "refuse"
    _shuffler: random.Random = field(default_factory=lambda: random.Random(0), repr=False)
    # Guards the shuffler: handler threads shuffle at once, and a shared Random is not thread-safe.
    _shuffle_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.style not in ("envelope", "bare"):
            raise ValueError(f"style must be 'envelope' or 'bare', not {self.style!r}")
        if self.nameless not in NAMELESS:
            raise ValueError(f"nameless must be one of {', '.join(NAMELESS)}, not {self.nameless!r}")

    @staticmethod
    def unordered(time_bounds: bool = False, **knobs: Any) -> Dict[str, Any]:
        """The knobs of a service that answers every audits query with the whole trail as a bare
        list, in a different order on each call, ignoring limit, offset and sort; with
        ``time_bounds`` it still honours start_date/end_date (and pages, though the order changes
        between pages)."""
        knobs.setdefault("style", "bare")
        return dict(knobs, paging=time_bounds, honour_sort=False, honour_start_date=time_bounds, shuffle=True)

    def check_params(self, query: Query, known: Set[str]) -> None:
        """Strict: 400 on a parameter outside ``known`` and the paging ones this service takes."""
        if not self.strict_params:
            return
        if self.paging:
            known = known | ({"limit", "offset"} if self.takes_limit else {"offset"})
        unknown = sorted(set(query) - known)
        if unknown:
            raise BadRequest(f"unknown parameter(s): {', '.join(unknown)}")

    def check_audit_params(self, query: Query) -> None:
        known = set(_AUDIT_PARAMS)
        known |= {"start_date", "end_date"} if self.honour_start_date else set()
        known |= {"sort"} if self.honour_sort else set()
        self.check_params(query, known)

    def time_bounds(self, query: Query) -> Tuple[str, str]:
        """start_date/end_date as canonical created_at text (which compares correctly as text)."""
        if not self.honour_start_date:
            return "", "~"
        start, end = time_param(query, "start_date"), time_param(query, "end_date")
        return start or "", end or "~"

    def order(self, records: List[Record], query: Query) -> List[Record]:
        """A trail (oldest first) in the order this service lists it."""
        if self.shuffle:
            with self._shuffle_lock:
                self._shuffler.shuffle(records)
            return records
        sort = one(query, "sort") if self.honour_sort else None
        if sort is None:
            return records[::-1]  # newest first, as the portal lists activity
        field_name, _, direction = sort.partition(" ")
        if field_name != "created_at" or direction.upper() not in ("", "ASC", "DESC"):
            raise BadRequest("sort must be 'created_at ASC' or 'created_at DESC'")
        return records[::-1] if direction.upper() == "DESC" else records

    def page(self, key: str, items: List[Record], query: Query) -> Any:
        """The reply payload: the page ``query`` asks for, in this service's shape."""
        offset = 0
        if self.paging:
            limit = (
                int_param(query, "limit", self.default_limit, minimum=1)
                if self.takes_limit
                else self.default_limit
            )
            offset = 0 if self.ignore_offset else int_param(query, "offset", 0, minimum=0)
            if self.max_offset is not None and offset > self.max_offset:
                raise BadRequest(f"offset must be at most {self.max_offset}")
            if limit > self.max_limit:
                if self.strict_params:
                    raise BadRequest(f"limit must be at most {self.max_limit}")
                limit = self.max_limit
            items = items[offset : offset + limit]
        if self.style == "bare":
            return items
        return {"version": 1, "status": "ok", "code": 200, "offset": offset, "count": len(items), key: items}
