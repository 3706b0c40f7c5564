"""Which stream delivers a record several streams return, and what the others' states may pass
(forwarder/delivery/claims.py), with the commit rule that applies it (commits.py)."""

from __future__ import annotations

from typing import List

import pytest

from forwarder.delivery.batcher import Batcher
from forwarder.delivery.claims import Claims
from forwarder.delivery.commits import CommitTracker
from forwarder.errors import StateError
from forwarder.events import Event
from forwarder.reading.pass_ import start_position
from forwarder.reading.select import Limits
from forwarder.records import AuditRecord, parse_record
from forwarder.state.model import StreamState
from forwarder.streams import Stream
from forwarder.timeutil import format_us
from tests.fakes import MemorySlot, MemoryStore

WINDOW_S = 3600
WINDOW_US = WINDOW_S * 1_000_000
TIE_S = 5
TIE_US = TIE_S * 1_000_000
BASE_US = 1_700_000_000 * 1_000_000
ALICE, BOB, DOMAIN = (
    Stream("user", "alice@x.example"),
    Stream("user", "bob@x.example"),
    Stream("domain", "x.example"),
)


def record(n: int, action: str = "domain.update", ts_us: int = BASE_US) -> AuditRecord:
    raw = {
        "action": action,
        "user": ALICE.name,
        "object": "x.example",
        "n": n,
        "created_at": format_us(ts_us),
    }
    return parse_record(raw)


def claims() -> Claims:
    return Claims.load(MemoryStore(), WINDOW_S, TIE_S, clock=lambda: BASE_US / 1e6)


def test_the_first_stream_to_queue_a_record_ships_it_and_the_others_skip_it():
    run = claims()
    copy, other = record(1), record(2)
    assert run.keeps(ALICE, copy) and run.keeps(DOMAIN, copy)  # both select it before either queues it
    assert run.claim(ALICE.key, [copy, other]) == [0, 1]
    assert run.claim(DOMAIN.key, [copy]) == []  # claimed meanwhile: a skipped copy now
    assert not run.keeps(BOB, copy)  # selected after the claim: skipped at once
    assert run.keeps(ALICE, copy) and run.claim(ALICE.key, [copy]) == [0]  # its own, in a later pass
    assert run.waiting(DOMAIN.key) and run.waiting(BOB.key) and not run.waiting(ALICE.key)


def test_a_record_delivered_by_an_earlier_run_is_skipped_by_every_stream():
    store = MemoryStore()
    copy = record(1)
    earlier = Claims.load(store, WINDOW_S, TIE_S)
    assert earlier.claim(ALICE.key, [copy]) == [0]
    earlier.record([copy.event_id])
    later = Claims.load(store, WINDOW_S, TIE_S)
    assert not later.keeps(ALICE, copy) and not later.keeps(DOMAIN, copy)


def test_a_skipped_copy_caps_the_watermark_until_recorded_then_joins_the_last_commit():
    run = claims()
    copy = record(1)
    run.claim(ALICE.key, [copy])
    run.keeps(DOMAIN, copy)
    waiting = run.settled(DOMAIN.key, last=True)
    assert waiting.recorded == {} and waiting.ceiling_us == copy.ts_us + TIE_US
    run.record([copy.event_id])
    assert run.settled(DOMAIN.key, last=False).recorded == {}  # only a last commit takes it
    done = run.settled(DOMAIN.key, last=True)
    assert done.recorded == {copy.event_id: copy.ts_us} and done.ceiling_us is None and not done.moves
    assert run.settled(DOMAIN.key, last=True).recorded == {}  # handed out once


def test_recorded_copies_move_the_watermark_only_for_a_stream_that_read_its_whole_trail():
    run = claims()
    copy = record(1)
    run.claim(ALICE.key, [copy])
    run.keeps(DOMAIN, copy)
    run.record([copy.event_id])
    run.read_whole(DOMAIN.key)
    assert run.settled(DOMAIN.key, last=True).moves


def test_index_writes_are_shared_and_a_failed_one_stops_the_rest():
    slot = MemorySlot("delivered-ids")
    run = Claims(slot, WINDOW_S, TIE_S)
    ids = [record(n).event_id for n in range(3)]
    run.record(ids[:2])
    run.record(ids[:1])  # held already: no write
    assert slot.puts == 1
    slot.version += 1  # another writer
    with pytest.raises(StateError, match="delivered-ids index at memory/delivered-ids was not saved"):
        run.record(ids[2:])
    slot.version -= 1
    with pytest.raises(StateError, match="not saved"):
        run.record(ids[2:])
    assert slot.puts == 1


def segments_of(batcher: Batcher, stream: str, recs: List[AuditRecord]):
    events = [Event(r.event_id, r.ts_us, b"x") for r in recs]
    return batcher.add(stream, recs, events, now=0.0)


@pytest.mark.parametrize("later_us", [2 * WINDOW_US, 600_000_000])
@pytest.mark.parametrize("accepted", [True, False])
def test_a_stream_that_skipped_a_copy_never_passes_it_unless_its_claim_was_delivered(accepted, later_us):
    """The domain stream skipped a DMARC change the user stream claimed, and shipped a record two
    windows, or ten minutes, later. Its state passes the copy only once the copy's batch is accepted
    and recorded: until then its next poll, which reads from its watermark minus the tie margin,
    reads the copy again."""
    run = claims()
    copy, later = record(1), record(2, "domain.create", BASE_US + later_us)
    tracker = CommitTracker(WINDOW_US, run)
    batcher = Batcher(1, 10**9)
    assert run.claim(ALICE.key, [copy]) == [0] and not run.keeps(DOMAIN, copy)
    assert run.claim(DOMAIN.key, [later]) == [0]
    run.read_whole(DOMAIN.key)
    tracker.open(ALICE.key, StreamState(), None)
    tracker.open(DOMAIN.key, StreamState(), None)
    (alice_batch,) = segments_of(batcher, ALICE.key, [copy])
    (domain_batch,) = segments_of(batcher, DOMAIN.key, [later])
    tracker.closed(alice_batch)
    tracker.closed(domain_batch)
    (domain_commit,) = tracker.accepted(domain_batch)  # while the copy's claim is open
    assert domain_commit.state.watermark_us == copy.ts_us + TIE_US
    assert domain_commit.state.is_new(copy, 0, WINDOW_US)
    limits = Limits(initial_lookback_s=86400, window_s=WINDOW_S, max_records_per_pass=100, tie_margin_s=TIE_S)
    start = start_position(domain_commit.state, 0, limits).start_us
    assert start is not None and start <= copy.ts_us
    tracker.committed(domain_commit, "2")
    if accepted:
        run.record([copy.event_id])
        tracker.accepted(alice_batch)
    else:
        tracker.refused(alice_batch, "refused")
    (last,) = tracker.end() or [None]
    if not accepted:
        assert last is None
        return
    assert last.stream == DOMAIN.key and not last.state.is_new(copy, 0, WINDOW_US)
    # the watermark catches up with the next delivery; what lies beyond it is among the delivered
    assert not last.state.is_new(later, 0, WINDOW_US) and last.state.delivered_total == 1
