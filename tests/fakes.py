"""In-memory implementations of the forwarder's own small interfaces, for property tests that run
thousands of examples. The real local store, sinks and API are tested over their real I/O elsewhere."""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from forwarder.errors import ConflictError, SinkError
from forwarder.events import Event, SendResult
from forwarder.retry import Pace
from forwarder.state.model import StreamState
from forwarder.state.store import Loaded


class MemorySlot:
    """One document, replaced by compare-and-swap on a counter."""

    def __init__(self, name: str) -> None:
        self.location = f"memory/{name}"
        self.doc: Optional[Dict[str, Any]] = None
        self.version = 0
        self.puts = 0
        self._lock = threading.Lock()

    def read(self) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        with self._lock:
            return (None, None) if self.doc is None else (dict(self.doc), str(self.version))

    def put(self, doc: Dict[str, Any], expected: Optional[str]) -> str:
        with self._lock:
            if (None if self.doc is None else str(self.version)) != expected:
                raise ConflictError(f"{self.location}: version {expected} is stale")
            self.doc, self.version, self.puts = dict(doc), self.version + 1, self.puts + 1
            return str(self.version)

    def delete(self, expected: str) -> None:
        with self._lock:
            self.doc = None


class MemoryStore:
    location = "memory"

    def __init__(self) -> None:
        self.docs: Dict[str, Any] = {}
        self.versions: Dict[str, int] = {}
        self.slots: Dict[str, MemorySlot] = {}
        self._lock = threading.Lock()

    def slot(self, name: str) -> MemorySlot:
        with self._lock:
            return self.slots.setdefault(name, MemorySlot(name))

    def load(self, key: str) -> Loaded:
        with self._lock:
            if key not in self.docs:
                return Loaded(StreamState(), None)
            return Loaded(StreamState.from_doc(self.docs[key], key), str(self.versions[key]))

    def commit(self, key: str, state: StreamState, version: Optional[str]) -> str:
        with self._lock:
            current = str(self.versions[key]) if key in self.versions else None
            if current != version:
                raise ConflictError(f"{key}: version {version} is stale")
            self.versions[key] = self.versions.get(key, 0) + 1
            self.docs[key] = state.to_doc(key)
            return str(self.versions[key])

    def keys(self) -> List[str]:
        return list(self.docs)

    def delete(self, key: str) -> None:
        self.docs.pop(key, None)
        self.versions.pop(key, None)

    def acquire_lease(self, owner: str, ttl_seconds: int) -> Any:
        raise NotImplementedError


class MemorySink:
    """Collects event ids; ``fail_sends`` makes chosen send calls (1-based) refuse the batch."""

    name = "memory"

    def __init__(
        self,
        max_batch_events: int = 500,
        max_batch_bytes: int = 1_000_000,
        fail_sends: Sequence[int] = (),
        max_in_flight: int = 1,
    ) -> None:
        self.max_batch_events = max_batch_events
        self.max_batch_bytes = max_batch_bytes
        self.fail_sends = set(fail_sends)
        self.max_in_flight = max_in_flight
        self.calls = 0
        self.delivered: List[str] = []
        self.batches: List[List[str]] = []

    def send(self, batch: Sequence[Event]) -> SendResult:
        self.calls += 1
        if self.calls in self.fail_sends:
            raise SinkError("refused on purpose", retryable=True)
        ids = [e.id for e in batch]
        self.delivered.extend(ids)
        self.batches.append(ids)
        return SendResult.all_delivered(len(batch))

    def close(self) -> None:
        pass


class Waits(List[float]):
    """The waits asked of a retry policy or a rate limiter (``RetryPolicy(sleep=waits)``), recorded
    instead of slept."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


# A run that tries again at once (``run_once(settings, pace=NO_WAITS)``): the waits between tries are
# asked of it and not slept.
NO_WAITS = Pace(sleep=lambda seconds: None)
