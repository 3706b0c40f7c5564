"""The quarantine's line format, written and read back the same way by every place it is kept.

One JSON line per entry: when, which stream, what kind (``event``: a formatted event a sink refused;
``record``: a raw audit record that cannot be placed in time), its id, the reason, its time and the
event or record itself.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set

from .. import jsonutil
from ..events import Event, Rejection
from ..timeutil import format_us

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    """One quarantined item as read back: ``where`` is the file or object holding it."""

    where: str
    doc: Dict[str, Any]

    @property
    def event_id(self) -> str:
        return str(self.doc.get("event_id", ""))


def unplaceable(raw: Any, reason: str) -> Rejection:
    """A raw audit record that cannot be placed in time, kept as the JSON it came in (escaped to
    ASCII, so bytes that are not UTF-8 and lone surrogates survive) under the digest of that text."""
    text = jsonutil.ascii_text(raw)
    body = text.encode("ascii")
    return Rejection(Event(hashlib.sha256(body).hexdigest(), 0, body), reason, kind="record")


def quarantine_lines(stream_key: str, rejections: Sequence[Rejection], at_us: int) -> List[bytes]:
    return [
        jsonutil.dumps(
            {
                "quarantined_at": format_us(at_us),
                "stream": stream_key,
                "kind": r.kind,
                "event_id": r.event.id,
                "reason": r.reason,
                "time": format_us(r.event.time_us),
                "is_json": r.event.is_json,
                r.kind: r.event.body.decode("utf-8", "replace"),
            }
        )
        + b"\n"
        for r in rejections
    ]


def read_entries(data: bytes, where: str) -> Iterator[Entry]:
    """The entries of one file or object. A line that is not a JSON object (torn by a killed writer,
    or written by something else) is skipped with a warning: the entries of whole lines still count."""
    unreadable = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            value = jsonutil.loads(line)
        except ValueError:
            value = None
        if isinstance(value, dict):
            yield Entry(where, value)
        else:
            unreadable += 1
    if unreadable:
        log.warning("skipped unreadable quarantine lines", extra={"location": where, "lines": unreadable})


def without(data: bytes, event_ids: Set[str]) -> List[bytes]:
    """The lines of ``data`` (line ends kept) but the entries with these ids; an unreadable line stays."""
    return [line for line in data.splitlines(keepends=True) if _entry_id(line) not in event_ids]


def _entry_id(line: bytes) -> Optional[str]:
    try:
        return str(jsonutil.loads(line).get("event_id"))
    except (ValueError, AttributeError):
        return None
