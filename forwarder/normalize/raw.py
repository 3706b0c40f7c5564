"""The ``raw`` format: the record exactly as the API returned it, serialized canonically.

Canonical (sorted keys, compact, UTF-8) rather than as received, so the body's SHA-256 is the
event id and the same record always gives the same bytes.
"""

from __future__ import annotations

from ..events import Event
from ..records import AuditRecord
from . import NormalizeOptions, new_tuple


def format_raw(record: AuditRecord, opts: NormalizeOptions) -> Event:
    """``opts`` is unused: raw output depends on the record alone."""
    return new_tuple(Event, (record.event_id, record.ts_us, record.canonical, True))
