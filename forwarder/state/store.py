"""The state-store contract: load, compare-and-swap commit, and a run lease; and the conditional
document slot the stores build them from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Protocol, Tuple

from .model import StreamState


@dataclass(frozen=True)
class StorePlace:
    """What every store opener takes (``open_at``): the location, the splunkd token a ``kvstore://``
    store authenticates with (FORWARDER_SPLUNK_TOKEN), the bound of each call to an AWS store
    (FORWARDER_HTTP_TIMEOUT). Each store reads the part it needs."""

    location: str
    splunk_token: Optional[str] = field(default=None, repr=False)
    timeout_seconds: float = 60.0


@dataclass(frozen=True)
class Loaded:
    """A stream's state and the opaque version a commit must present to replace it."""

    state: StreamState
    version: Optional[str]  # None: no document yet (a commit must create it)


class Lease(Protocol):
    """A lock with an expiry. ``renew`` extends it and raises LeaseHeld if it was lost."""

    owner: str

    def renew(self) -> None: ...

    def release(self) -> None: ...


class StateStore(Protocol):
    """One document per stream key, each replaced only by compare-and-swap."""

    location: str  # human-readable, for messages (a path or a URI, never a secret)

    def load(self, key: str) -> Loaded:
        """The stored state, or an empty state with version None. Raises StateError if unreadable."""
        ...

    def commit(self, key: str, state: StreamState, version: Optional[str]) -> str:
        """Write ``state`` if the stored version is still ``version``; return the new version.

        Raises ConflictError when another writer got there first.
        """
        ...

    def keys(self) -> list[str]: ...

    def delete(self, key: str) -> None: ...

    def acquire_lease(self, owner: str, ttl_seconds: int) -> Lease:
        """Take the run lease, or raise LeaseHeld naming the holder and its expiry."""
        ...

    def slot(self, name: str) -> ConditionalSlot:
        """A document of the namespace beside the streams' (never listed among them)."""
        ...


class ConditionalSlot(Protocol):
    """One stored document, replaced or removed only while its version is the expected one."""

    location: str  # for messages

    def read(self) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        """The document and its version, or ``(None, None)``. Raises StateError if unreadable."""
        ...

    def put(self, doc: Dict[str, Any], expected: Optional[str]) -> str:
        """Write if the version is still ``expected`` (None: absent); return the new version.

        Raises ConflictError otherwise.
        """
        ...

    def delete(self, expected: str) -> None:
        """Remove if the version is still ``expected``; raises ConflictError otherwise."""
        ...
