"""A tenant's cycle marker: whether the work the planner queued last time is still under way.

The planner queues a tenant's shards only when its previous cycle is finished, so a tenant slower
than the schedule runs cycle after cycle instead of piling copies of the same work in the queue.
The marker is one small document in the tenant's store (``fanout-cycle``)::

    {"schema": 1, "cycle": "<id>", "opened": "<time>", "remaining": <shards not finished>}

The planner opens it before it sends the shards; each finished shard counts it down (a re-queued
remainder does not: its shard is not finished). A cycle older than ``max_age`` counts as finished
whatever it says, so a shard that went to the dead-letter queue holds its tenant back only that
long. The marker is advice: a lost race is logged, and delivery stays exactly as safe.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Optional

from ..errors import ConflictError, StateError
from ..state.store import ConditionalSlot
from ..timeutil import format_us, parse_iso

log = logging.getLogger(__name__)

NAME = "fanout-cycle"
SCHEMA = 1
_ATTEMPTS = 3


def marker(store: Any) -> ConditionalSlot:
    """The store's cycle-marker slot; ValueError for a store that cannot keep one."""
    slot = getattr(store, "slot", None)
    if slot is None:
        raise ValueError(
            f"state location {store.location}: fan-out needs a directory, s3:// or dynamodb:// store"
        )
    result: ConditionalSlot = slot(NAME)
    return result


def open_cycle_of(slot: ConditionalSlot, now_us: int, max_age_s: int) -> Optional[str]:
    """Why the tenant is still busy (its open cycle, younger than ``max_age_s``), or None."""
    doc, _ = slot.read()
    if not _valid(doc):
        return None
    assert doc is not None
    age_s = (now_us - parse_iso(doc["opened"])) // 1_000_000
    if doc["remaining"] > 0 and age_s < max_age_s:
        return f"cycle {doc['cycle']} opened {age_s}s ago still has {doc['remaining']} shard(s) to run"
    return None


def open_cycle(slot: ConditionalSlot, cycle: str, shards: int, now_us: int) -> None:
    doc = {"schema": SCHEMA, "cycle": cycle, "opened": format_us(now_us), "remaining": shards}
    _update(slot, lambda old: doc)


def finish_shard(slot: ConditionalSlot, cycle: str) -> None:
    """Count one shard of ``cycle`` as finished (nothing when a newer cycle replaced it)."""

    def down(old: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        if not _valid(old) or old is None or old["cycle"] != cycle:
            return None
        return {**old, "remaining": max(0, int(old["remaining"]) - 1)}

    _update(slot, down)


def _valid(doc: Optional[Dict[str, Any]]) -> bool:
    if not doc or doc.get("schema") != SCHEMA:
        return False
    try:
        parse_iso(doc["opened"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return isinstance(doc.get("cycle"), str) and isinstance(doc.get("remaining"), int)


def _update(slot: ConditionalSlot, change: Any) -> None:
    for _ in range(_ATTEMPTS):
        try:
            old, version = slot.read()
            new = change(old)
            if new is None:
                return
            slot.put(new, version)
            return
        except ConflictError:
            continue
        except StateError as exc:
            log.warning("fan-out cycle marker not written", extra={"where": slot.location, "error": str(exc)})
            return
    log.warning("fan-out cycle marker kept changing; left as it is", extra={"where": slot.location})
