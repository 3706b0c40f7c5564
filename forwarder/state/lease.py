"""The run lease, over any backend that can put and delete one document conditionally.

A lease is a small document ``{"schema", "owner", "acquired", "expires", "ttl"}``. Every store (a local
directory, S3, DynamoDB) only has to provide a ``ConditionalSlot``; the rules live here once:

* acquire: allowed when there is no lease, when it has expired (``now >= expires``), or when it
  already names the same owner; the write is conditional on the version just read, so of two runs
  racing for an expired lease exactly one wins and the other is told who holds it.
* bound: a holder writes ``expires`` as its clock plus the TTL, so a lease expiring further ahead of
  the reader's clock than its TTL (plus a skew) was written by a clock running ahead: a run whose
  clock was a year ahead, killed, would keep every run out for a year. The reader writes the expiry
  back to its own clock plus the TTL (conditionally, owner unchanged): a dead holder's lease then
  expires within a TTL, a live one keeps it by renewing.
* renew: a conditional write on the version *we* last wrote. If anyone else wrote or removed the
  lease since, the condition fails and the run learns that it lost the lease, unless the lease
  still names us (a reader bounded its expiry): then the write is made on that version.
* release: a conditional delete on that same version (or, as for renew, the current one while the
  lease still names us), so a run never removes a lease that another run took over after ours
  expired. A stop request does not cut it (``stop.RELEASING``): a lease left behind would refuse
  every run until it expires.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple, TypeVar

from .. import stop
from ..errors import ConflictError, LeaseHeld, StateError
from ..logs import quoted
from ..timeutil import format_us, parse_iso
from .store import ConditionalSlot

LEASE_SCHEMA = 1
_ACQUIRE_ATTEMPTS = 3
CLOCK_SKEW_US = 300 * 1_000_000  # how far ahead of a reader's a holder's clock may run unbounded

Clock = Callable[[], float]  # seconds since the epoch, like time.time
T = TypeVar("T")


class LeaseDoc(NamedTuple):
    """The lease document's fields. A NamedTuple rather than a frozen dataclass: the first run of a
    process imports this module, and making the dataclass cost that run ~0.4 ms."""

    owner: str
    acquired_us: int
    expires_us: int
    ttl_us: int = 0  # 0: not recorded (a lease an older version wrote)

    def admits(self, owner: str, now_us: int) -> bool:
        """Whether ``owner`` may take this lease now."""
        return owner == self.owner or now_us >= self.expires_us

    def bounded(self, now_us: int, ttl_us: int) -> LeaseDoc:
        """This lease expiring at most its TTL (``ttl_us`` when it has none recorded) after ``now_us``,
        itself when it already does, within CLOCK_SKEW_US."""
        ttl = self.ttl_us or ttl_us
        if self.expires_us <= now_us + ttl + CLOCK_SKEW_US:
            return self
        return self._replace(expires_us=now_us + ttl)

    def to_doc(self) -> Dict[str, Any]:
        return {
            "schema": LEASE_SCHEMA,
            "owner": self.owner,
            "acquired": format_us(self.acquired_us),
            "expires": format_us(self.expires_us),
            "ttl": self.ttl_us // 1_000_000,
        }

    @classmethod
    def from_doc(cls, doc: Dict[str, Any], where: str) -> LeaseDoc:
        hint = "remove it if no run is active"
        if doc.get("schema") != LEASE_SCHEMA:
            raise StateError(f"lease at {where} has schema version {quoted(doc.get('schema'))}; {hint}")
        try:
            owner, ttl = doc["owner"], doc.get("ttl", 0)
            if not isinstance(owner, str):
                raise TypeError(f"owner is a {type(owner).__name__}")
            if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
                raise ValueError(f"ttl is {ttl!r}")
            return cls(owner, parse_iso(doc["acquired"]), parse_iso(doc["expires"]), ttl * 1_000_000)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StateError(f"lease at {where} is corrupt ({exc}); {hint}") from None


def clock_us(clock: Clock) -> int:
    return int(clock() * 1_000_000)


def read_lease(slot: ConditionalSlot) -> Tuple[Optional[LeaseDoc], Optional[str]]:
    doc, version = slot.read()
    if doc is None:
        return None, None
    return LeaseDoc.from_doc(doc, slot.location), version


def held_error(holder: LeaseDoc, where: str, now_us: int) -> LeaseHeld:
    remaining = max(0, (holder.expires_us - now_us) // 1_000_000)
    return LeaseHeld(
        f"the run lease at {where} is held by {quoted(holder.owner)} until {format_us(holder.expires_us)} "
        f"({remaining}s from now): another run is active, or a stopped run's lease has not expired yet"
    )


class SlotLease:
    """A lease this process holds. ``version`` is the proof: only our own writes carry it."""

    def __init__(self, slot: ConditionalSlot, doc: LeaseDoc, version: str, ttl_us: int, clock: Clock) -> None:
        self.owner = doc.owner
        self._slot = slot
        self._doc = doc
        self._version = version
        self._ttl_us = ttl_us
        self._clock = clock

    @property
    def expires_us(self) -> int:
        return self._doc.expires_us

    def renew(self) -> None:
        now = clock_us(self._clock)
        doc = LeaseDoc(self.owner, self._doc.acquired_us, now + self._ttl_us, self._ttl_us)
        try:
            self._version = self._as_holder(lambda version: self._slot.put(doc.to_doc(), version))
        except ConflictError:
            raise self._lost(now) from None
        self._doc = doc

    def release(self) -> None:
        """Remove the lease, also once a stop was requested (its own deadline bounds the delete)."""
        with suppress(ConflictError), stop.shielded(stop.RELEASING):  # ConflictError: no longer ours
            self._as_holder(self._slot.delete)

    def _as_holder(self, write: Callable[[str], T]) -> T:
        """``write(version)`` on the version we wrote last; on the current one when that conflicts
        but the lease still names us (a reader bounded its expiry); ConflictError otherwise."""
        try:
            return write(self._version)
        except ConflictError:
            holder, version = read_lease(self._slot)
            if holder is None or holder.owner != self.owner or version is None:
                raise
            return write(version)

    def _lost(self, now_us: int) -> LeaseHeld:
        holder, _ = read_lease(self._slot)
        if holder is None:
            return LeaseHeld(f"the run lease at {self._slot.location} was lost: another run removed it")
        return held_error(holder, self._slot.location, now_us)

    def __repr__(self) -> str:
        return f"SlotLease(owner={self.owner!r}, location={self._slot.location!r})"


def acquire(
    slot: ConditionalSlot,
    owner: str,
    ttl_seconds: int,
    clock: Clock,
    holder_gone: Callable[[str], bool] = lambda owner: False,
) -> SlotLease:
    """Take the lease in ``slot`` for ``ttl_seconds``, or raise LeaseHeld naming the holder.

    ``holder_gone`` lets a store that can see the holder (a local process) take over a lease whose
    run is known to be dead instead of waiting for it to expire.
    """
    if not owner:
        raise ValueError("a lease owner must not be empty")
    if ttl_seconds <= 0:
        raise ValueError(f"a lease needs a positive ttl, got {ttl_seconds}")
    ttl_us = int(ttl_seconds * 1_000_000)
    for _ in range(_ACQUIRE_ATTEMPTS):
        holder, version = read_lease(slot)
        now = clock_us(clock)
        if holder is not None and not holder.admits(owner, now) and not holder_gone(holder.owner):
            bounded = holder.bounded(now, ttl_us)
            if bounded != holder:
                try:
                    slot.put(bounded.to_doc(), version)
                except ConflictError:
                    continue  # renewed or taken meanwhile: look again
            raise held_error(bounded, slot.location, now)
        doc = LeaseDoc(owner, now, now + ttl_us, ttl_us)
        try:
            new_version = slot.put(doc.to_doc(), version)
        except ConflictError:
            continue  # another run wrote the lease between our read and put: look again
        return SlotLease(slot, doc, new_version, ttl_us, clock)
    raise LeaseHeld(f"the run lease at {slot.location} kept changing while this run tried to take it")
