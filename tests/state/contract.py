"""The behaviour every state store owes the pipeline, as a mixin any store's tests can reuse.

A test class mixes in ``StoreContract`` and provides one fixture, ``open_handle``: a callable
``open_handle(clock) -> StateStore`` whose calls all open the SAME location, empty at the start of
each test (a fresh directory, bucket prefix or table). ``clock`` is the store's time source for
leases (seconds since the epoch, like ``time.time``).
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from forwarder.delivery.claims import Claims
from forwarder.errors import ConflictError, LeaseHeld, StateError
from forwarder.records import AuditRecord
from forwarder.state.delivered import MAX_IDS, SLOT, DeliveredIndex
from forwarder.state.model import StreamState
from forwarder.state.names import HASH_CHARS, MARK
from forwarder.streams import Stream
from forwarder.timeutil import format_us

HOUR_US = 3600 * 1_000_000
T0_US = 1_767_225_600 * 1_000_000  # 2026-01-01T00:00:00Z
KEY = "user/alice@example.com"
STREAM = Stream("user", "alice@example.com")
UNICODE_KEYS = [
    "user/alice@example.com",
    "domain/bücher.example",
    "domain/example.com/domain.update",
    "domain/例え.テスト",
    "user/o'brien+tag@example.com",
    "domain/%2F already-encoded ~tilde",
    ".leading-dot",
    "user/😀@example.com",
]

# A 10,012-character user address: over every store's name limit (a file name 255 bytes, an S3 key
# 1,024, a DynamoDB partition key 2,048). The others share its first thousands of characters.
LONG_USER = "user/" + "a" * 10_000 + "@example.com"
LONG_KEYS = [LONG_USER, LONG_USER[:-3] + "net", "domain/" + "ü" * 5_000 + ".example"]


def lookalike(key: str) -> str:
    """A key shaped like the name a store gives ``key`` when it is cut short (names.bounded)."""
    return key[:200] + MARK + hashlib.sha256(key.encode("utf-8")).hexdigest()[:HASH_CHARS]


def make_record(event_id: str, ts_us: int) -> AuditRecord:
    return AuditRecord(raw={"id": event_id}, event_id=event_id, ts_us=ts_us)


def delivered(*records: AuditRecord, base: StreamState | None = None) -> StreamState:
    return (base or StreamState()).advance(records, HOUR_US)


def deliver_with_retries(store, record) -> int:
    """Read, advance over ``record``, commit; again on each conflict. Returns the conflicts met."""
    conflicts = 0
    while True:
        loaded = store.load(KEY)
        try:
            store.commit(KEY, delivered(record, base=loaded.state), loaded.version)
            return conflicts
        except ConflictError:
            conflicts += 1


class FakeClock:
    def __init__(self, now: float = T0_US / 1_000_000) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class StoreContract:
    @pytest.fixture
    def clock(self):
        return FakeClock()

    @pytest.fixture
    def store(self, open_handle, clock):
        return open_handle(clock)

    # -- load / commit ---------------------------------------------------------------------

    def test_missing_key_loads_empty_state_without_version(self, store):
        loaded = store.load(KEY)
        assert loaded.state == StreamState()
        assert loaded.version is None

    def test_commit_then_load_round_trips(self, store):
        state = delivered(make_record("a", T0_US), make_record("b", T0_US + 5))
        version = store.commit(KEY, state, None)
        loaded = store.load(KEY)
        assert loaded.state == state
        assert loaded.version == version

    def test_every_commit_gives_a_new_version(self, store):
        first = store.commit(KEY, delivered(make_record("a", T0_US)), None)
        second = store.commit(KEY, delivered(make_record("b", T0_US + 1)), first)
        assert second != first
        assert store.load(KEY).version == second

    def test_commit_with_a_stale_version_conflicts_and_keeps_the_winner(self, store, open_handle, clock):
        store.commit(KEY, delivered(make_record("a", T0_US)), None)
        mine = store.load(KEY)
        theirs = open_handle(clock).load(KEY)
        winner = delivered(make_record("b", T0_US + 1), base=theirs.state)
        open_handle(clock).commit(KEY, winner, theirs.version)
        with pytest.raises(ConflictError):
            store.commit(KEY, delivered(make_record("c", T0_US + 2), base=mine.state), mine.version)
        assert store.load(KEY).state == winner

    def test_only_one_of_two_creators_wins(self, store, open_handle, clock):
        store.commit(KEY, delivered(make_record("a", T0_US)), None)
        with pytest.raises(ConflictError):
            open_handle(clock).commit(KEY, delivered(make_record("b", T0_US)), None)
        assert set(store.load(KEY).state.seen) == {"a"}

    def test_a_version_for_a_missing_document_conflicts(self, store):
        version = store.commit(KEY, delivered(make_record("a", T0_US)), None)
        with pytest.raises(ConflictError):
            store.commit("user/bob@example.com", StreamState(), version)
        assert store.load("user/bob@example.com").version is None

    def test_concurrent_read_modify_commit_loses_no_update(self, open_handle, clock):
        workers, commits_each = 8, 12
        start = threading.Barrier(workers)

        def work(worker: int) -> int:
            store = open_handle(clock)  # each worker its own handle, like separate runs
            start.wait()
            return sum(
                deliver_with_retries(store, make_record(f"w{worker}-{n}", T0_US + n))
                for n in range(commits_each)
            )

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(work, range(workers)))
        final = open_handle(clock).load(KEY).state
        assert final.delivered_total == workers * commits_each
        assert len(final.seen) == workers * commits_each

    # -- keys / delete ---------------------------------------------------------------------

    def test_keys_lists_committed_streams_and_delete_removes_one(self, store):
        assert store.keys() == []
        for key in ("user/a@example.com", "user/b@example.com", "domain/example.com"):
            store.commit(key, delivered(make_record(key, T0_US)), None)
        assert store.keys() == ["domain/example.com", "user/a@example.com", "user/b@example.com"]
        store.delete("user/a@example.com")
        assert store.keys() == ["domain/example.com", "user/b@example.com"]
        assert store.load("user/a@example.com") == store.load("never/committed")
        store.delete("user/a@example.com")  # deleting again is not an error
        store.commit("user/a@example.com", StreamState(), None)  # and the stream can start over
        assert store.keys() == ["domain/example.com", "user/a@example.com", "user/b@example.com"]

    def test_a_version_from_before_a_delete_conflicts(self, store):
        version = store.commit(KEY, delivered(make_record("a", T0_US)), None)
        store.delete(KEY)
        with pytest.raises(ConflictError):
            store.commit(KEY, delivered(make_record("b", T0_US)), version)

    def test_unicode_keys_round_trip(self, store):
        for n, key in enumerate(UNICODE_KEYS):
            store.commit(key, delivered(make_record(f"id-{n}", T0_US + n)), None)
        assert store.keys() == sorted(UNICODE_KEYS)
        for n, key in enumerate(UNICODE_KEYS):
            assert set(store.load(key).state.seen) == {f"id-{n}"}

    def test_keys_over_every_name_limit_commit_list_and_delete(self, store):
        for n, key in enumerate(LONG_KEYS):
            store.commit(key, delivered(make_record(f"long-{n}", T0_US + n)), None)
        assert store.keys() == sorted(LONG_KEYS)
        for n, key in enumerate(LONG_KEYS):
            assert set(store.load(key).state.seen) == {f"long-{n}"}  # each its own document
        store.delete(LONG_USER)
        assert store.keys() == sorted(LONG_KEYS[1:]) and store.load(LONG_USER).version is None

    def test_a_key_shaped_like_a_shortened_name_is_a_stream_of_its_own(self, store):
        fake = lookalike(LONG_USER)
        store.commit(LONG_USER, delivered(make_record("long", T0_US)), None)
        store.commit(fake, delivered(make_record("fake", T0_US)), None)
        assert store.keys() == sorted([LONG_USER, fake])
        assert set(store.load(LONG_USER).state.seen) == {"long"}
        assert set(store.load(fake).state.seen) == {"fake"}

    # -- lease -----------------------------------------------------------------------------

    def test_lease_held_by_another_owner_names_holder_and_expiry(self, store, clock):
        lease = store.acquire_lease("run-a", 60)
        assert lease.owner == "run-a"
        with pytest.raises(LeaseHeld) as err:
            store.acquire_lease("run-b", 60)
        message = str(err.value)
        assert "run-a" in message
        assert format_us(T0_US + 60 * 1_000_000)[:19] in message

    def test_lease_is_not_a_stream(self, store):
        store.acquire_lease("run-a", 60)
        assert store.keys() == []

    def test_expired_lease_is_taken_over_and_the_old_holder_learns_it(self, store, clock):
        old = store.acquire_lease("run-a", 60)
        clock.advance(59)
        with pytest.raises(LeaseHeld):
            store.acquire_lease("run-b", 60)
        clock.advance(1)  # expiry is exclusive: at `expires` the lease is free
        new = store.acquire_lease("run-b", 60)
        with pytest.raises(LeaseHeld) as err:
            old.renew()
        assert "run-b" in str(err.value)
        old.release()  # must not remove run-b's lease
        with pytest.raises(LeaseHeld):
            store.acquire_lease("run-c", 60)
        new.release()
        store.acquire_lease("run-c", 60)

    def test_renew_extends_the_lease(self, store, clock):
        lease = store.acquire_lease("run-a", 60)
        clock.advance(50)
        lease.renew()
        clock.advance(50)  # 100 s after acquiring, 50 s after renewing
        with pytest.raises(LeaseHeld):
            store.acquire_lease("run-b", 60)
        clock.advance(10)
        store.acquire_lease("run-b", 60)

    def test_released_lease_is_free_at_once(self, store):
        lease = store.acquire_lease("run-a", 3600)
        lease.release()
        lease.release()  # twice is harmless
        store.acquire_lease("run-b", 3600)

    def test_renew_after_release_reports_the_loss(self, store):
        lease = store.acquire_lease("run-a", 60)
        lease.release()
        with pytest.raises(LeaseHeld):
            lease.renew()

    def test_same_owner_may_take_its_own_lease_again(self, store):
        store.acquire_lease("run-a", 60)
        again = store.acquire_lease("run-a", 60)
        again.renew()

    def test_a_lease_from_a_clock_a_year_ahead_keeps_runs_out_a_ttl_not_a_year(
        self, store, open_handle, clock
    ):
        ahead = FakeClock(clock.now + 365 * 86400)
        open_handle(ahead).acquire_lease("run-a", 60)  # and the run is killed: never released
        with pytest.raises(LeaseHeld) as err:
            store.acquire_lease("run-b", 60)
        assert format_us(T0_US + 60 * 1_000_000)[:19] in str(err.value)  # its expiry, bounded
        clock.advance(30)
        with pytest.raises(LeaseHeld):  # the bound is written once, not moved by every reader
            store.acquire_lease("run-b", 60)
        clock.advance(30)
        store.acquire_lease("run-b", 60)

    def test_a_live_holder_whose_clock_runs_ahead_keeps_its_lease_by_renewing(
        self, store, open_handle, clock
    ):
        ahead = FakeClock(clock.now + 365 * 86400)
        held = open_handle(ahead).acquire_lease("run-a", 60)
        for _ in range(3):
            with pytest.raises(LeaseHeld):
                store.acquire_lease("run-b", 60)  # bounds the expiry the holder wrote
            clock.advance(40)
            ahead.advance(40)
            held.renew()  # the lease still names it: renewed on the bounded version
        held.release()
        store.acquire_lease("run-b", 60)

    def test_a_lease_within_the_skew_of_the_readers_clock_is_left_as_written(self, store, open_handle, clock):
        ahead = FakeClock(clock.now + 200)  # under CLOCK_SKEW_US
        held = open_handle(ahead).acquire_lease("run-a", 60)
        with pytest.raises(LeaseHeld) as err:
            store.acquire_lease("run-b", 60)
        assert format_us(T0_US + 260 * 1_000_000)[:19] in str(err.value)
        held.release()

    def test_lease_survives_other_handles(self, store, open_handle, clock):
        store.acquire_lease("run-a", 60)
        with pytest.raises(LeaseHeld):
            open_handle(clock).acquire_lease("run-b", 60)

    def test_the_delivered_ids_index_round_trips_by_compare_and_swap(self, store, open_handle, clock):
        ids = [f"{n:024x}".ljust(64, "e") for n in range(3)]
        first, rival = Claims.load(store, 3600, 5, clock), Claims.load(open_handle(clock), 3600, 5, clock)
        first.record(ids[:2])
        again = Claims.load(open_handle(clock), 3600, 5, clock)
        assert not any(again.keeps(STREAM, make_record(i, T0_US)) for i in ids[:2])
        with pytest.raises(StateError, match=r"delivered-ids index .* not saved"):
            rival.record(ids[2:])  # it read the index before the first wrote it
        assert store.keys() == []  # not a stream

    def test_a_full_delivered_ids_index_fits_and_a_corrupt_one_names_its_location(self, store, clock):
        full = DeliveredIndex().adding([f"{n:024x}" for n in range(MAX_IDS)], int(clock()), 3600)
        slot = store.slot(SLOT)
        version = slot.put(full.to_doc(), None)
        loaded = Claims.load(store, 3600, 5, clock)
        assert not loaded.keeps(STREAM, make_record(f"{MAX_IDS - 1:024x}" + "0" * 40, T0_US))
        assert loaded.keeps(STREAM, make_record("f" * 64, T0_US))
        slot.put({"schema": 1, "count": 2, "ids": "not base64!"}, version)
        with pytest.raises(StateError, match="corrupt") as failure:
            Claims.load(store, 3600, 5, clock)
        assert slot.location in str(failure.value)

    # -- the scheduler document (forwarder.scheduling), advice kept beside the states ---------

    def test_scheduler_document_round_trips_and_a_lost_race_is_ignored(self, store, open_handle, clock):
        from forwarder.report import RunReport, StreamReport
        from forwarder.scheduling.policy import Policy
        from forwarder.scheduling.scheduler import Scheduler
        from forwarder.streams import Stream

        policy = Policy(10, 120, 60, 600, None, None, 3600, 6000)
        plan = [Stream("user", "alice@example.com"), Stream("domain", "example.com")]
        report = RunReport("now", streams=[StreamReport(KEY, new=1)])
        mine, theirs = Scheduler.for_store(store, policy, clock), Scheduler.for_store(store, policy, clock)
        mine.load()
        theirs.load()
        mine.finish(plan, report, 3.5)
        theirs.finish(plan, RunReport("now"), None)  # read before mine was written: loses, quietly
        again = Scheduler.for_store(open_handle(clock), policy, clock)
        again.load()
        assert again.book.streams[KEY].delivered_s == int(clock())
        assert again.book.bucket == (clock(), 3.5)
        assert store.keys() == []  # not a stream
