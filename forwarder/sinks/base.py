"""The sink contract, and the batching and NDJSON framing the sinks share."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Callable, Iterable, Iterator, List, Protocol, Sequence, Tuple, TypeVar

from ..events import Event, Rejection, SendResult

DEFAULT_MAX_EVENTS = 500
DEFAULT_MAX_BYTES = 900_000  # under the 1 MB request limit of Splunk Cloud HEC and most collectors

T = TypeVar("T")


class Sink(Protocol):
    """``send`` returns only once the batch is durably accepted, and raises SinkError otherwise.

    Events it refuses for good are returned as rejections (they go to quarantine); everything
    else in the batch counts as delivered. ``max_batch_events``/``max_batch_bytes`` bound a batch.
    ``max_in_flight`` is how many ``send`` calls may run at once (1: one connection, in order).
    A sink may also say ``linger_s``: how long a partly filled batch waits for more events at least
    (a data lake's objects want to be few and large).
    """

    name: str
    max_batch_events: int
    max_batch_bytes: int
    max_in_flight: int

    def send(self, batch: Sequence[Event]) -> SendResult: ...

    def close(self) -> None: ...


class Probed(Protocol):
    def probe(self) -> str: ...

    def close(self) -> None: ...


def probed(sink: Probed) -> str:
    """``sink.probe()`` (`check`'s line about it), the sink closed after."""
    try:
        return sink.probe()
    finally:
        sink.close()


@dataclass(frozen=True)
class Bounds:
    """The batch-splitting rule, for every batch (a sink's requests and a run's shared batches): at
    most ``max_events`` events and ``max_bytes`` of bodies, one separator each. An event larger than
    ``max_bytes`` on its own travels alone; the sink decides whether to reject it."""

    max_events: int
    max_bytes: int

    @staticmethod
    def size(body: bytes) -> int:
        """What an event adds to its batch's bytes."""
        return len(body) + 1

    def full(self, count: int) -> bool:
        """A batch of ``count`` events takes no more, whatever their size."""
        return count >= self.max_events

    def closes(self, count: int, size: int, n: int) -> bool:
        """Whether an event of ``n`` bytes (see ``size``) starts a new batch after ``count`` events of
        ``size`` bytes."""
        return count > 0 and (self.full(count) or size + n > self.max_bytes)


def split(items: Iterable[T], body: Callable[[T], bytes], bounds: Bounds) -> Iterator[List[T]]:
    """Group items in order into batches as ``bounds`` splits them, by the bytes ``body`` gives."""
    batch: List[T] = []
    size = 0
    for item in items:
        n = bounds.size(body(item))
        if bounds.closes(len(batch), size, n):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += n
    if batch:
        yield batch


def batches(events: Iterable[Event], max_events: int, max_bytes: int) -> Iterator[List[Event]]:
    """Group events in order into batches of at most ``max_events`` and ``max_bytes`` of bodies."""
    return split(events, attrgetter("body"), Bounds(max_events, max_bytes))


def reject_oversized(
    batch: Sequence[Event], encode: Callable[[Event], bytes], limit: int, what: str, limit_name: str = "limit"
) -> Tuple[List[Event], List[bytes], List[Rejection]]:
    """(kept events, their encoded forms, rejections): an event whose ``what`` is over ``limit`` bytes
    is rejected without being sent, since no receiver would take it however it is batched."""
    kept: List[Event] = []
    encoded: List[bytes] = []
    rejected: List[Rejection] = []
    for event in batch:
        data = encode(event)
        if len(data) > limit:
            reason = f"its {what} is {len(data)} bytes, over the {limit}-byte {limit_name}"
            rejected.append(Rejection(event, reason))
        else:
            kept.append(event)
            encoded.append(data)
    return kept, encoded, rejected


def ndjson_line(event: Event) -> bytes:
    """``event.body`` plus a newline, with any raw CR/LF inside the body neutralised.

    Normalizers never emit raw line breaks, but one slipping through would split a record in
    two (or forge one), so guard anyway: outside JSON strings a line break is whitespace and may
    become a space; in a text (CEF) line it becomes the ``\\n``/``\\r`` escape that CEF itself uses.
    """
    body = event.body
    if b"\n" in body or b"\r" in body:
        if event.is_json:
            body = body.replace(b"\r", b" ").replace(b"\n", b" ")
        else:
            body = body.replace(b"\r", b"\\r").replace(b"\n", b"\\n")
    return body + b"\n"


def ndjson(batch: Sequence[Event]) -> bytes:
    return b"".join(ndjson_line(event) for event in batch)
