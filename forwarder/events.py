"""A normalized event, serialized once, as every sink receives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Event(NamedTuple):
    """``body`` is a JSON object (ecs, ocsf, raw) or a text line (cef), UTF-8 encoded.

    A named tuple: immutable like a frozen dataclass, at half its cost to build (one per record)."""

    id: str
    time_us: int
    body: bytes
    is_json: bool = True


@dataclass(frozen=True)
class Rejection:
    """An event a sink refused for good (mapping error, over its size limit): it goes to quarantine."""

    event: Event
    reason: str
    kind: str = "event"  # "record": a raw audit record that could not be placed (no usable time)


@dataclass
class SendResult:
    """What a sink reports once a batch is durably handled. Anything not rejected was delivered."""

    delivered: int
    rejected: list[Rejection]

    @classmethod
    def all_delivered(cls, count: int) -> SendResult:
        return cls(delivered=count, rejected=[])
