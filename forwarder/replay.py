"""`audit-forwarder quarantine list` and `quarantine replay`: look at what was quarantined and, once the
cause is fixed (a mapping corrected, a size limit raised, a forwarder that can now place a record),
send it again.

Replay sends each entry under its original event id, so an idempotent sink (Elasticsearch ``create``
with ``_id``, an S3 key from the ids, a SIEM deduplicating on the id) keeps one copy. An ``event``
entry is sent as it was formatted; a ``record`` entry (a raw audit record that could not be placed)
is parsed and formatted again with the current settings, and stays if it still cannot be placed.
An entry leaves the quarantine only once the sink has proved it accepted it (its ``send`` returned
it as delivered); refused again, it stays, with its old reason, and the exit status says so.

A replay holds the run lease of the state store (``replay_holding``), as a run does: two replays at
once would both send every entry, so the second one is skipped (exit 75), as is a replay while a run
is active.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, TextIO, Tuple

from . import jsonutil
from .config import Settings
from .errors import LeaseHeld, SinkError, StateError
from .events import Event
from .normalize import NormalizeOptions, get_formatter
from .quarantine import Entry, Quarantine
from .records import InvalidRecord, parse_record
from .sinks.base import Sink, batches
from .state.store import StateStore
from .timeutil import now_us, parse_iso

log = logging.getLogger(__name__)
SUMMARY_FIELDS = ("quarantined_at", "stream", "kind", "event_id", "reason", "time")


def selected(entries: Sequence[Entry], streams: Sequence[str], ids: Sequence[str]) -> List[Entry]:
    return [
        e
        for e in entries
        if (not streams or e.doc.get("stream") in streams) and (not ids or e.event_id in ids)
    ]


def list_entries(
    quarantine: Quarantine,
    out: TextIO,
    full: bool,
    streams: Sequence[str],
    ids: Sequence[str],
    tenant: str = "",
) -> int:
    """One JSON line per entry (the event or record itself only with ``full``), naming ``tenant``
    when there is one; returns the count."""
    found = selected(list(quarantine.entries()), streams, ids)
    named = {"tenant": tenant} if tenant else {}
    for entry in found:
        doc = entry.doc if full else {k: entry.doc.get(k) for k in SUMMARY_FIELDS}
        out.write(jsonutil.dumps({**named, **doc, "location": entry.where}).decode("utf-8") + "\n")
    return len(found)


@dataclass
class ReplayOutcome:
    replayed: int = 0
    still_quarantined: List[Dict[str, str]] = field(default_factory=list)  # event id, reason, location
    error: Optional[str] = None  # the sink failed: what was not proven accepted stays
    skipped: Optional[str] = None  # another run or replay holds the lease: nothing was sent

    def stays(self, entry: Entry, reason: str) -> None:
        """``entry`` stays quarantined: said with why and where it is (as ``quarantine list`` shows it)."""
        self.still_quarantined.append({"event_id": entry.event_id, "reason": reason, "location": entry.where})

    def to_dict(self) -> Dict[str, object]:
        shown: Dict[str, object] = {"replayed": self.replayed, "still_quarantined": self.still_quarantined}
        return {**shown, "error": self.error, **({"skipped": self.skipped} if self.skipped else {})}


def _as_event(entry: Entry, settings: Settings) -> Tuple[Optional[Event], str]:
    """The event to send again for ``entry``, or None and why not."""
    doc = entry.doc
    kind = doc.get("kind", "event")
    try:
        time_us = parse_iso(str(doc.get("time") or doc.get("quarantined_at")))
    except ValueError:
        time_us = now_us()
    if kind == "event":
        body = str(doc.get("event", "")).encode("utf-8")
        return Event(entry.event_id, time_us, body, bool(doc.get("is_json", True))), ""
    try:
        raw = jsonutil.loads(str(doc.get("record", "")))
        record = parse_record(raw, str(doc.get("stream", "user/")).split("/", 1)[0])
    except (InvalidRecord, ValueError) as exc:
        return None, f"still cannot be placed: {exc}"
    options = NormalizeOptions(
        ingest_time_us=now_us(),
        vendor=settings.vendor,
        product=settings.product,
        include_original=settings.include_original,
    )
    return get_formatter(settings.format)(record, options), ""


def replay_holding(
    store: StateStore, owner: str, ttl_s: int, work: Callable[[Callable[[], None]], ReplayOutcome]
) -> ReplayOutcome:
    """``work(renew)`` while holding the store's run lease (for ``ttl_s``), released after; a skipped
    outcome naming the holder when another run or replay has it. ``renew`` extends the lease
    (LeaseHeld if lost)."""
    try:
        lease = store.acquire_lease(owner, ttl_s)
    except LeaseHeld as exc:
        log.warning("replay skipped: another run holds the lease", extra={"reason": str(exc)})
        return ReplayOutcome(skipped=str(exc))
    try:
        return work(lease.renew)
    finally:
        lease.release()


def replay(
    quarantine: Quarantine,
    sink: Sink,
    settings: Settings,
    streams: Sequence[str],
    ids: Sequence[str],
    renew: Callable[[], None] = lambda: None,
) -> ReplayOutcome:
    """Send the selected entries again; remove each one the sink proves it accepted. ``renew`` runs
    after each batch (the lease of ``replay_holding``)."""
    outcome = ReplayOutcome()
    pending: List[Tuple[Event, Entry]] = []
    for entry in selected(list(quarantine.entries()), streams, ids):
        event, why = _as_event(entry, settings)
        if event is None:
            outcome.stays(entry, why)
        else:
            pending.append((event, entry))
    where_of = {id(event): entry for event, entry in pending}
    try:
        for batch in batches([event for event, _ in pending], sink.max_batch_events, sink.max_batch_bytes):
            result = sink.send(batch)
            refused = {id(r.event) for r in result.rejected}
            accepted: Dict[str, Set[str]] = defaultdict(set)
            for event in batch:
                entry = where_of[id(event)]
                if id(event) in refused:
                    reason = next(r.reason for r in result.rejected if r.event is event)
                    outcome.stays(entry, reason)
                else:
                    accepted[entry.where].add(entry.event_id)
            for where, done in accepted.items():  # only now: the sink returned them as delivered
                quarantine.remove(where, done)
                outcome.replayed += len(done)
            renew()
    except (SinkError, StateError) as exc:  # the sink failed, or an accepted entry could not be removed
        outcome.error = str(exc)
        log.error("replay stopped", extra={"error": outcome.error})
    return outcome
