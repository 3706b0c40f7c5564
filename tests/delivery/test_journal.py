"""The pending-objects journal (forwarder/delivery/journal.py): the objects of a batch cut in the
middle are found by the next run, their events recorded as delivered before it sends anything, so
none lands twice and none is lost."""

from __future__ import annotations

import hashlib
from typing import Dict, List, Optional, Sequence

import pytest

from forwarder.delivery import journal as journal_module
from forwarder.delivery.claims import Claims
from forwarder.delivery.journal import SLOT, Journal
from forwarder.errors import StateError
from forwarder.events import Event
from tests.fakes import MemorySink, MemoryStore

WINDOW_S = 3600


def event(n: int) -> Event:
    return Event(id=hashlib.sha256(str(n).encode()).hexdigest(), body=b"{}", time_us=n, is_json=True)


class Lake:
    """A sink that writes a batch as objects of two events each, named by their ids."""

    def __init__(self) -> None:
        self.objects: Dict[str, List[str]] = {}

    @staticmethod
    def groups(batch: Sequence[Event]) -> Dict[str, List[str]]:
        ids = sorted(e.id for e in batch)
        pairs = [ids[i : i + 2] for i in range(0, len(ids), 2)]
        return {"obj/" + hashlib.sha256("".join(p).encode()).hexdigest(): p for p in pairs}

    def object_keys(self, batch: Sequence[Event]) -> List[str]:
        return sorted(self.groups(batch))

    def write(self, batch: Sequence[Event], objects: int) -> None:
        """The first ``objects`` objects of ``batch`` written, then the process dies."""
        for key, ids in sorted(self.groups(batch).items())[:objects]:
            self.objects[key] = ids

    def held_by(self, key: str) -> Optional[List[str]]:
        return self.objects.get(key)


def claims(store: MemoryStore) -> Claims:
    return Claims.load(store, WINDOW_S, 5, clock=lambda: 1_700_000_000.0)


@pytest.mark.parametrize("written", [0, 1, 2, 3])
def test_the_next_run_records_the_events_of_the_objects_a_cut_batch_wrote_and_only_those(written):
    store, lake = MemoryStore(), Lake()
    batch = [event(n) for n in range(6)]
    first = Journal.open(store, lake, claims(store))
    assert first is not None
    assert first.begin(batch) == lake.object_keys(batch)
    lake.write(batch, written)  # killed here: neither the index nor the journal were written again

    run = claims(store)
    assert Journal.open(store, lake, run) is not None

    held = {i for ids in lake.objects.values() for i in ids}
    assert len(held) == 2 * written
    again = claims(store)  # what the run after it reads
    assert {e.id for e in batch if again._index.holds(e.id)} == held, "recorded: exactly what was written"
    assert store.slot(SLOT).doc is None, "the journal emptied once recovered"


def test_a_confirmed_batch_leaves_nothing_in_the_journal_and_the_next_run_recovers_nothing():
    store, lake = MemoryStore(), Lake()
    run = claims(store)
    journal = Journal.open(store, lake, run)
    assert journal is not None
    batch = [event(n) for n in range(4)]
    keys = journal.begin(batch)
    assert store.slot(SLOT).doc == {"schema": 1, "keys": keys}
    lake.write(batch, len(keys))
    run.record([e.id for e in batch])
    journal.end(keys)
    assert store.slot(SLOT).doc is None

    before = store.slot("delivered-ids").puts
    Journal.open(store, lake, claims(store))
    assert store.slot("delivered-ids").puts == before, "nothing to record"


def test_an_object_that_does_not_hold_what_its_key_names_is_not_recorded():
    store, lake = MemoryStore(), Lake()
    journal = Journal.open(store, lake, claims(store))
    assert journal is not None
    batch = [event(n) for n in range(2)]
    journal.begin(batch)
    lake.held_by = lambda key: None  # type: ignore[method-assign]  # the sink found it not its own

    Journal.open(store, lake, claims(store))

    assert not any(claims(store)._index.holds(e.id) for e in batch), "sent again rather than lost"


def test_a_batch_that_would_overfill_the_journal_is_refused_before_anything_is_written(monkeypatch):
    store, lake = MemoryStore(), Lake()
    journal = Journal.open(store, lake, claims(store))
    assert journal is not None
    first = journal.begin([event(n) for n in range(2)])
    monkeypatch.setattr(journal_module, "MAX_CHARS", len(first[0]) + 10)
    with pytest.raises(StateError, match="journal at memory/pending-objects is full"):
        journal.begin([event(n) for n in range(2, 4)])
    assert store.slot(SLOT).doc == {"schema": 1, "keys": first}


def test_a_journal_write_that_failed_refuses_every_later_batch():
    store, lake = MemoryStore(), Lake()
    journal = Journal.open(store, lake, claims(store))
    assert journal is not None
    journal.begin([event(1)])
    store.slot(SLOT).version += 1  # another writer
    with pytest.raises(StateError, match="was not saved"):
        journal.begin([event(2)])
    store.slot(SLOT).version -= 1
    with pytest.raises(StateError, match="was not saved"):
        journal.end([])


@pytest.mark.parametrize(
    "doc", [{"schema": 2, "keys": []}, {"schema": 1, "keys": "k"}, {"schema": 1, "keys": [""]}, []]
)
def test_an_unreadable_journal_fails_the_run_naming_where_it_is(doc):
    store = MemoryStore()
    store.slot(SLOT).put(doc, None)
    with pytest.raises(StateError, match="pending-objects journal at memory/pending-objects"):
        Journal.open(store, Lake(), claims(store))


def test_a_sink_that_writes_a_batch_in_one_request_has_no_journal():
    store = MemoryStore()
    assert Journal.open(store, MemorySink(), claims(store)) is None
    assert store.slot(SLOT).puts == 0
