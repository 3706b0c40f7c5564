"""Times on the wire: the bounds the reader sends (``start_date``, ``end_date``) and the time a raw
record says it was made, as every strategy and the probe read them."""

from __future__ import annotations

from typing import Any, Optional

from ..timeutil import format_us, parse_iso

SECOND = 1_000_000


def bound(us: int, up: bool = False) -> str:
    """A time bound as the integrations send it (whole seconds, ``Z``), widened by one second so
    that the service's rounding and inclusiveness cannot leave out a record we asked for."""
    us = us + 2 * SECOND - 1 if up else us - SECOND
    return format_us(us)[:19] + "Z"


def record_time(raw: Any) -> Optional[int]:
    """created_at of a raw record; None when unusable (the reader reports those)."""
    created = raw.get("created_at") if isinstance(raw, dict) else None
    try:
        return parse_iso(created) if isinstance(created, str) else None
    except ValueError:
        return None
