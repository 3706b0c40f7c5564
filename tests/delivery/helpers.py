"""Records, events and batches shared by the delivery tests."""

from __future__ import annotations

from typing import List

from forwarder.delivery.batcher import Batch, Batcher
from forwarder.events import Event
from forwarder.records import AuditRecord, parse_record
from forwarder.timeutil import format_us

WINDOW_US = 3600 * 1_000_000
BASE_US = 1_700_000_000 * 1_000_000


def records(user: str, count: int) -> List[AuditRecord]:
    return [
        parse_record(
            {
                "action": "user.login",
                "user": user,
                "object": user,
                "n": i,
                "created_at": format_us(BASE_US + i),
            }
        )
        for i in range(count)
    ]


def events(recs: List[AuditRecord], size: int = 9) -> List[Event]:
    return [Event(r.event_id, r.ts_us, b"x" * size) for r in recs]


def add(batcher: Batcher, stream: str, recs: List[AuditRecord], size: int = 9) -> List[Batch]:
    return batcher.add(stream, recs, events(recs, size), now=0.0)
