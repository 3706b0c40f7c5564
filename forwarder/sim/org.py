"""A generated organization as the API serves it: its records, the trails the audits endpoint scopes
from them, and the activity tests add while the simulator serves.

No clock: the ``now_us`` of each question is given (the simulator passes its own clock's time).
"""

from __future__ import annotations

import bisect
import calendar
import random
import threading
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from ..timeutil import format_us, from_us, to_us
from .entities import DAY_US, Record, SimDomain, SimUser
from .history import History

DOMAIN_HISTORY_MONTHS = 13


def months_before(us: int, months: int) -> int:
    """The same wall-clock instant ``months`` calendar months earlier (day clamped to month length)."""
    dt = from_us(us)
    year, month0 = divmod(dt.year * 12 + dt.month - 1 - months, 12)
    day = min(dt.day, calendar.monthrange(year, month0 + 1)[1])
    return to_us(dt.replace(year=year, month=month0 + 1, day=day))


def domain_history_start_us(now_us: int) -> int:
    """The oldest created_at the domain trail still returns at ``now_us`` (13 calendar months)."""
    return months_before(now_us, DOMAIN_HISTORY_MONTHS)


class Org:
    """A generated organization. Records are shared, not copied: treat them as read-only."""

    def __init__(self, seed: int, history: History, records: List[Record]) -> None:
        self.seed = seed
        self._history = history
        # Guards the records and the sorted views built from them: handler threads read while a test
        # adds activity.
        self._lock = threading.Lock()
        self._records = list(records)
        self._domain_keys = {d.name.casefold() for d in history.domains}
        # Sorted views, rebuilt after a change: a deep stream is asked for hundreds of pages.
        self._sorted: Optional[List[Record]] = None
        self._trails: Dict[Tuple[str, str], Tuple[List[Record], List[str], List[Record]]] = {}
        # id() of a record served in the listed trails only, whatever its fields (add_record_in)
        self._placed: Dict[int, FrozenSet[Tuple[str, str]]] = {}

    @property
    def users(self) -> List[SimUser]:
        return self._history.users

    @property
    def domains(self) -> List[SimDomain]:
        return self._history.domains

    def all_records(self) -> List[Record]:
        """Every record once, oldest first (equal timestamps keep the order they were written)."""
        with self._lock:
            return list(self._sorted_records())

    def _sorted_records(self) -> List[Record]:
        """Caller holds the lock."""
        if self._sorted is None:
            self._sorted = sorted(self._records, key=_created_text)
            self._trails = {}
        return self._sorted

    def _changed(self) -> None:
        """Caller holds the lock."""
        self._sorted = None
        self._trails = {}

    def user_list(self) -> List[Record]:
        with self._lock:
            return [u.as_api() for u in self.users]

    def domain_list(self) -> List[Record]:
        """The live domains as a /v1/cp/domains list would give them (names in ASCII form)."""
        with self._lock:
            live = [d for d in self.domains if d.destroyed_us is None]
            return [{"id": i, "name": d.name.encode("idna").decode()} for i, d in enumerate(live, 1)]

    def records_for(
        self, object_type: str, name: str, now_us: int, start: str = "", end: str = "~"
    ) -> List[Record]:
        """A trail as the API scopes it, oldest first: the actor's actions for ``user`` (any case),
        the actions on a domain given in Unicode form for ``domain``, only back 13 months; with
        ``start``/``end`` (canonical created_at text, inclusive) only the records between them.
        An empty ``name`` is the whole organization's: every user's, or every domain's, records."""
        key = name.casefold()
        if object_type not in ("user", "domain") or (
            object_type == "domain" and key and key not in self._domain_keys
        ):
            return []
        trail, times, odd = self._trail(object_type, key)
        if object_type == "domain":
            start = max(start, format_us(domain_history_start_us(now_us)))
        found = trail[bisect.bisect_left(times, start) : bisect.bisect_right(times, end)]
        # Hostile records (add_raw_record) without a text created_at are served whatever the bounds.
        return sorted(found + odd, key=_created_text) if odd else found

    def _trail(self, object_type: str, key: str) -> Tuple[List[Record], List[str], List[Record]]:
        """One user's or domain's whole trail, oldest first, its created_at values, and the records
        whose created_at is not text (cached until a change: canonical timestamps sort as text, so
        a range is two bisections)."""
        with self._lock:
            everything = self._sorted_records()
            cached = self._trails.get((object_type, key))
            if cached is None:
                trail = [r for r in everything if self._in_trail(r, object_type, key)]
                timed = [r for r in trail if isinstance(r.get("created_at"), str)]
                odd = [r for r in trail if not isinstance(r.get("created_at"), str)]
                cached = self._trails[(object_type, key)] = (timed, [r["created_at"] for r in timed], odd)
            return cached

    def _in_trail(self, record: Record, object_type: str, key: str) -> bool:
        """Whether ``record`` is in the trail of ``key`` (every name of the type for "")."""
        placed = self._placed.get(id(record))
        if placed is not None:
            return any(t == object_type and (not key or name == key) for t, name in placed)
        if object_type == "user":
            return _names(record, "user", {key} if key else None)
        return _names(record, "object", {key} if key else self._domain_keys) and not str(
            record.get("filterable_action", "")
        ).startswith("user.")

    def add_activity(self, count: int, now_us: int) -> List[Record]:
        """``count`` new records after ``now_us``; every third one shares its predecessor's time."""
        h, rng = self._history, self._history.rng
        added: List[Record] = []
        ts = now_us
        with self._lock:
            for i in range(count):
                if i % 3 != 1:
                    ts += rng.randrange(1, 60_000_000)
                roll = rng.random()
                if roll < 0.75:
                    added.append(h.login(ts, rng.choice(h.users)))
                elif roll < 0.85:
                    added.append(h.profile_update(ts, rng.choice(h.users)))
                elif roll < 0.92:
                    added.append(h.role_change(ts, h.pick_target()))
                else:
                    added.append(h.dmarc_update(ts, rng.choice([d for d in h.domains if d.live_at(ts)])))
            self._records.extend(added)
            self._changed()
        return added

    def add_action(self, ts: int, actor: SimUser, domain: Optional[SimDomain] = None) -> Record:
        """One record by ``actor`` at ``ts``: a DMARC change of ``domain`` (in the actor's trail and
        the domain's), else a login."""
        with self._lock:
            h = self._history
            record = h.login(ts, actor) if domain is None else h.dmarc_update(ts, domain, actor=actor)
            self._records.append(record)
            self._changed()
        return record

    def add_raw_record(self, record: Record) -> Record:
        """Any object as a record of its ``user``'s trail, as it is: hostile inputs for tests."""
        with self._lock:
            self._records.append(record)
            self._changed()
        return record

    def add_record_in(self, record: Record, trails: Iterable[Tuple[str, str]]) -> Record:
        """``record`` served in these trails only, ``(object_type, name)`` each, whatever its fields
        say: a service is not obliged to be consistent (a domain action missing from its domain's
        trail, a record of one user in another's)."""
        with self._lock:
            self._placed[id(record)] = frozenset((t, name.casefold()) for t, name in trails)
            self._records.append(record)
            self._changed()
        return record

    def add_late_record(self, created_at_us: int) -> Record:
        """A login that reaches the API late, with an older ``created_at`` than records already served."""
        with self._lock:
            record = self._history.login(created_at_us, self._history.rng.choice(self.users))
            self._records.append(record)
            self._changed()
        return record

    def add_deep_stream(self, email: str, count: int, now_us: int, span_days: int = 300) -> SimUser:
        """A new user with ``count`` logins spread over the last ``span_days`` (some sharing a
        time): one deep stream for backlog benchmarks and tests. The users endpoint lists the user."""
        h, rng = self._history, random.Random(f"{self.seed}:{email}:{count}")
        user = SimUser(email, "Deep Backlog", ["DataAccessRole"])
        step = max(1, span_days * DAY_US // max(count, 1))
        ts = now_us - span_days * DAY_US
        added = []
        for i in range(count):
            if i % 7 == 3:  # every seventh record shares its predecessor's time (a profile save)
                added.append(h.profile_update(min(ts, now_us), user, actor=user))
                continue
            ts += rng.randrange(1, 2 * step)
            added.append(h.login(min(ts, now_us), user))
        with self._lock:
            h.users.append(user)
            self._records.extend(added)
            self._changed()
        return user


def _names(record: Record, field: str, keys: Optional[Set[str]]) -> bool:
    """Whether ``record``'s ``field`` is one of ``keys`` (any case), or any name at all for None."""
    value = str(record.get(field, "")).casefold()
    return bool(value) if keys is None else value in keys


def _created_text(record: Record) -> str:
    """created_at as text for ordering; a hostile record's odd value still sorts somewhere."""
    return str(record.get("created_at", ""))
