"""Timestamps as integer microseconds since the epoch (UTC): exact, sortable, JSON-safe."""

from __future__ import annotations

import re
import sys
from datetime import datetime, timedelta, timezone
from typing import Optional

from .logs import quoted

_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_ONE_US = timedelta(microseconds=1)
# The form format_us writes (years 1000-9999: strftime does not pad %Y below 1000), the form the API
# sends: such a string is parsed by the C parser, and can be used as it is instead of reformatted.
# Its separators sit every third character from the fourth: one slice checks them all.
_CANONICAL_SEPARATORS = "--T::."


def parse_iso(value: str) -> int:
    """Parse an ISO 8601 timestamp into epoch microseconds. A missing offset means UTC."""
    us = parse_canonical(value)
    return parse_iso_any(value) if us is None else us


def parse_canonical(value: str) -> Optional[int]:
    """``parse_iso(value)`` by the C parser when ``value`` is in the form ``format_us`` writes (the
    form the API sends), else None.

    Cheaper than a regular expression: with the length and the separators fixed, the C parser accepts
    only ASCII digits in the other places, or (before 3.11, reading the text without its Z) an offset
    for the fraction ("30.+00:00"), whose zone cannot be subtracted from the naive epoch. Whatever it
    refuses goes to the general parser, for its message."""
    if len(value) == 27 and value[4:20:3] == _CANONICAL_SEPARATORS and value[26] == "Z":
        try:
            delta = _FROM_ISO(value if _READS_Z else value[:-1]) - _CANONICAL_EPOCH
        except (ValueError, TypeError):  # TypeError: a zone before 3.11 (below), so no zone to check
            return None
        # to_us's sum: a third of timedelta // timedelta's cost
        us = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        if us >= _YEAR_1000_US:  # the year, read from the sum: an attribute less
            return us
    return None


# Python 3.11's fromisoformat reads the Z itself (UTC), a slice less, and only as the last character:
# an offset before it ("30.1+0000Z", "30.+00:00Z") is refused. Before 3.11 the text without its Z reads
# as naive, or as zoned with such an offset.
_READS_Z = sys.version_info >= (3, 11)
_CANONICAL_EPOCH = _EPOCH if _READS_Z else _NAIVE_EPOCH
_YEAR_1000_US = (datetime(1000, 1, 1) - _NAIVE_EPOCH) // _ONE_US
# A classmethod read from its class is bound anew on each read: bound once, a call costs 0.06 us less.
_FROM_ISO = datetime.fromisoformat


def parse_iso_any(value: str) -> int:
    """``parse_iso`` without its fast path for the canonical form."""
    m = _ISO.match(value.strip())
    if not m:
        raise ValueError(f"not an ISO 8601 timestamp: {value[:64]!r}")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    frac = (m.group(7) or "").ljust(6, "0")[:6]
    dt = datetime(year, month, day, hour, minute, second, int(frac), tzinfo=timezone.utc)
    if m.group(9):
        offset = timedelta(hours=int(m.group(10)), minutes=int(m.group(11)))
        dt = dt - offset if m.group(9) == "+" else dt + offset
    return to_us(dt)


def to_us(dt: datetime) -> int:
    delta = dt - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def format_us(us: int) -> str:
    """Canonical form: 2026-01-02T03:04:05.123456Z."""
    dt = _NAIVE_EPOCH + timedelta(microseconds=us)
    if dt.year < 1000:  # keep strftime's unpadded year: the bytes of events already shipped
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.isoformat(timespec="microseconds") + "Z"


def now_us() -> int:
    return to_us(datetime.now(timezone.utc))


_DURATION = re.compile(
    r"^\s*(\d+)\s*(mo|months?|y|years?|w|weeks?|d|days?|h|hours?|m|min|minutes?|s|sec|seconds?)\s*$"
)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> int:
    """Parse '14d', '13mo', '1h', '90m', '30s', '1y' into seconds (a month is 31 days, a year 366)."""
    m = _DURATION.match(text.lower())
    if not m:
        raise ValueError(f"not a duration: {quoted(text)} (use e.g. 30s, 90m, 1h, 14d, 2w, 13mo, 1y)")
    n, unit = int(m.group(1)), m.group(2)
    if unit.startswith("mo"):
        return n * 31 * 86400
    if unit.startswith("y"):
        return n * 366 * 86400
    if unit in ("min",) or unit.startswith("minute"):
        return n * 60
    if unit.startswith("sec"):
        return n
    return n * _UNIT_SECONDS[unit[0]]


def format_duration(seconds: float) -> str:
    """For people: the two largest units, e.g. '3d 4h', '5m 12s', '42s', '0.3s'."""
    if seconds < 10:
        return f"{max(seconds, 0.0):.1f}s"
    total = int(seconds)
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size or parts:
            parts.append(f"{total // size}{unit}")
            total %= size
        if len(parts) == 2:
            break
    return " ".join(parts)
