"""Per-stream delivery state: a watermark plus the ids delivered inside a look-back window.

A record is new when its id was not delivered and it is newer than the watermark, or inside the
window behind it. That covers equal timestamps at a batch boundary and records that reach the API
late with an older created_at. The state only ever moves over delivered records, and over records
written to quarantine because they cannot be placed in time: their quarantine ids join ``seen``, dated
when they were kept, so a record the service keeps returning is quarantined once, not on every run.

A peer's clock is not trusted: only a record dated at most the run's clock plus FUTURE_SKEW_US moves
the watermark (to its created_at). A record dated later (9999, a clock set years ahead) is delivered
once, and its id stays among the delivered until the watermark comes within the window of it, so it
is neither sent again nor allowed to hide the records that follow.

Nor is our own clock trusted to lower a watermark: whatever it says, the watermark is never lowered
below what was committed (a run whose clock is two days behind would otherwise send two days again).
So the watermark is always the created_at of a record delivered when no clock that placed it
disagreed; only a clock ahead *and* the service dating records into that future together can place
it ahead of the truth.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Mapping, Optional

from ..errors import StateError
from ..records import AuditRecord
from ..timeutil import format_us, now_us, parse_iso

SCHEMA_VERSION = 1
FUTURE_SKEW_US = 300 * 1_000_000  # how far past our clock a created_at may move the watermark


@dataclass
class StreamState:
    watermark_us: Optional[int] = None  # newest created_at delivered; None before the first delivery
    seen: Dict[str, int] = field(default_factory=dict)  # event id -> created_at, inside the window
    delivered_total: int = 0

    def is_new(self, record: AuditRecord, floor_us: int, window_us: int) -> bool:
        """``floor_us`` is where a first run starts (now minus the initial look-back)."""
        if self.watermark_us is None:
            return record.ts_us >= floor_us and record.event_id not in self.seen
        if record.event_id in self.seen:
            return False
        return record.ts_us >= self.watermark_us - window_us

    def advance(
        self,
        delivered: Iterable[AuditRecord],
        window_us: int,
        ceiling_us: Optional[int] = None,
        quarantined: Optional[Mapping[str, int]] = None,
        recorded: Optional[Mapping[str, int]] = None,
        recorded_move: bool = False,
        held_us: Optional[int] = None,
    ) -> StreamState:
        """The state after ``delivered`` were accepted by the sink; ``self`` is left unchanged.
        ``ceiling_us`` (default: now plus FUTURE_SKEW_US): a record dated later does not move the
        watermark. The watermark never goes down.
        ``quarantined`` maps the ids of unplaceable records already kept in quarantine to when: they
        are remembered, and age out, like delivered ids, but neither count nor move the watermark.
        ``recorded`` maps the ids of records another stream delivered to their created_at: remembered
        like delivered ids, not counted, and moving the watermark only when ``recorded_move``.
        ``held_us``: the watermark moves no further than it (copies of records not yet recorded)."""
        if ceiling_us is None:
            ceiling_us = now_us() + FUTURE_SKEW_US
        seen = dict(self.seen)
        seen.update(quarantined or {})
        seen.update(recorded or {})
        watermark = self.watermark_us
        count = 0
        for record in delivered:
            seen[record.event_id] = record.ts_us
            watermark = _moved(watermark, record.ts_us, ceiling_us, held_us)
            count += 1
        if recorded_move:
            for ts in (recorded or {}).values():
                watermark = _moved(watermark, ts, ceiling_us, held_us)
        if watermark is not None:
            low = watermark - window_us
            seen = {k: ts for k, ts in seen.items() if ts >= low}
        return StreamState(
            watermark_us=watermark,
            seen=seen,
            delivered_total=self.delivered_total + count,
        )

    def to_doc(self, stream_key: str) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "stream": stream_key,
            "watermark": None if self.watermark_us is None else format_us(self.watermark_us),
            "seen": {k: format_us(ts) for k, ts in sorted(self.seen.items(), key=lambda kv: kv[1])},
            "delivered_total": self.delivered_total,
        }

    @classmethod
    def from_doc(cls, doc: Any, where: str) -> StreamState:
        """Parse a stored document; ``where`` names the location in any error."""
        if not isinstance(doc, dict):
            raise StateError(f"state at {where} is not a JSON object")
        schema = doc.get("schema")
        if schema != SCHEMA_VERSION:
            raise StateError(
                f"state at {where} has schema version {schema!r}; this forwarder reads version "
                f"{SCHEMA_VERSION} (upgrade the forwarder, or reset this stream)"
            )
        try:
            watermark = doc.get("watermark")
            return cls(
                watermark_us=None if watermark is None else parse_iso(watermark),
                seen={str(k): parse_iso(v) for k, v in (doc.get("seen") or {}).items()},
                delivered_total=int(doc.get("delivered_total") or 0),
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise StateError(f"state at {where} is corrupt: {exc}") from None


def _moved(watermark: Optional[int], ts_us: int, ceiling_us: int, held_us: Optional[int]) -> Optional[int]:
    """The watermark once a record dated ``ts_us`` is delivered: up to that date but no further than
    ``held_us``, never down, and not at all by a record dated past ``ceiling_us`` (the clock's)."""
    if ts_us > ceiling_us:
        return watermark
    placed = ts_us if held_us is None else min(ts_us, held_us)
    return placed if watermark is None or placed > watermark else watermark
