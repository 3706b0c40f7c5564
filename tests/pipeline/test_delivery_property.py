"""The delivery guarantee as a property, over whole runs of several streams sharing the sink's batches.

Whatever the order, paging, duplicates, ties and late records of the service, whichever batches the
sink refuses or partly quarantines, whichever state writes lose their compare-and-swap, and wherever
the process dies (before or after a send was stored, before a commit, mid-fetch), with several
batches in flight: every record ends up delivered or quarantined (nothing lost), and a record handled
in a run where its streams finished cleanly is never sent again (nothing twice). A record may be in
several streams' trails, or in another stream's trail only (a service is not obliged to be
consistent): whichever stream returns it may ship it, and it is still shipped once. The sink is
idempotent by event id, as the guarantee assumes: re-sends after a crash or a failed stream are
allowed, and counted. Records that cannot be placed in time are mixed in: each is quarantined (the
process may die at that write too), never before a state that remembers it is written, and once its
stream finished a run cleanly after quarantining it, never again. The same runs into a data lake's
sink (``LakeSink``: a batch written as several objects named by their events, no de-duplication by
event id) land every row exactly once, whichever crash or refusal cut a batch between its objects.
"""

from __future__ import annotations

import tempfile
import threading
from collections import Counter, defaultdict
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder.delivery.claims import Claims
from forwarder.errors import ConflictError, SinkError
from forwarder.events import Event, Rejection, SendResult
from forwarder.normalize import NormalizeOptions
from forwarder.pipeline import RunContext, run_stream, run_streams
from forwarder.quarantine import LocalQuarantine, unplaceable
from forwarder.reading.select import Limits
from forwarder.records import event_id
from forwarder.report import RunReport
from forwarder.sinks.s3 import ids_digest
from forwarder.streams import Stream
from forwarder.timeutil import format_us, now_us
from tests.fakes import MemorySink, MemoryStore

STREAM = Stream("user", "alice@example.com")
INDEX_WINDOW_S = 7200  # longer than any example: what the index forgets is never what is asked
USERS = ["alice@example.com", "bob@example.com", "carol@example.com", "dave@example.com"]


class Crash(BaseException):
    """A process death: nothing in the forwarder may catch it."""


class World:
    """Counts the run's I/O steps (fetches, sends, commits) and dies at step ``crash_at``; once dead,
    every step raises Crash and does nothing, as after a SIGKILL."""

    def __init__(self, crash_at: Optional[int], send_stored_first: bool) -> None:
        self.crash_at = crash_at
        self.send_stored_first = send_stored_first  # a crashing send: the sink stored the batch first
        self.steps = 0
        self.dead = False
        self._lock = threading.Lock()

    def step(self) -> bool:
        """Raises Crash if dead; True if this step is the one that dies (the caller decides when)."""
        with self._lock:
            if self.dead:
                raise Crash()
            self.steps += 1
            if self.steps == self.crash_at:
                self.dead = True
                return True
            return False


class WorldQuarantine(LocalQuarantine):
    """Writing an unplaceable record is a step of the world: the process may die before it.
    ``records`` logs (run, stream key, id) of each one written, once the write returned."""

    def __init__(self, world: World) -> None:
        super().__init__(tempfile.mkdtemp())
        self.world = world
        self.run = 0
        self.records: List[Tuple[int, str, str]] = []
        self.lock = threading.Lock()

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None:
        placed = [r for r in rejections if r.kind == "record"]
        if placed and self.world.step():
            raise Crash()
        super().keep(stream_key, rejections)
        with self.lock:
            self.records += [(self.run, stream_key, r.event.id) for r in placed]

    def written(self) -> Set[str]:
        with self.lock:
            return {rid for _, _, rid in self.records}


class WorldStore(MemoryStore):
    """``lose_race`` (1-based commit calls) fail as if another writer had changed the state. A state
    may remember an unplaceable record (ids in ``unplaceable``) only once ``quarantine`` wrote it."""

    def __init__(
        self, world: World, lose_race: Set[int], quarantine: WorldQuarantine, unplaceable: Set[str]
    ) -> None:
        super().__init__()
        self.world, self.lose_race, self.calls = world, lose_race, 0
        self.quarantine, self.unplaceable = quarantine, unplaceable
        self.run = 0
        self.lost: Set[Tuple[int, str]] = set()  # (run, stream key) of every lost race
        self._count = threading.Lock()

    def commit(self, key, state, version):
        early = set(state.seen) & self.unplaceable - self.quarantine.written()
        assert not early, f"a state remembers {early} before they were quarantined"
        if self.world.step():
            raise Crash()
        with self._count:
            self.calls += 1
            lose = self.calls in self.lose_race
            if lose:
                self.lost.add((self.run, key))
        if lose:
            raise ConflictError(f"{key}: changed by another writer")
        return super().commit(key, state, version)

    def slot(self, name):
        return WorldSlot(self.world, super().slot(name))


class WorldSlot:
    """A document of the store (the delivered-ids index) whose writes are steps of the world: the
    process may die between a batch's acceptance and the index write, or between that and commits."""

    def __init__(self, world: World, slot: Any) -> None:
        self.world, self._slot, self.location = world, slot, slot.location

    def read(self):
        return self._slot.read()

    def put(self, doc, expected):
        if self.world.step():
            raise Crash()
        return self._slot.put(doc, expected)

    def delete(self, expected):
        self._slot.delete(expected)


class IdempotentSink:
    """Stores events by id. Send calls in ``refuse`` (1-based) fail whole; events in ``poison`` are
    rejected for good (quarantined) wherever they travel. ``accepted`` logs (run, id) per delivery."""

    name = "idempotent"

    def __init__(self, world: World, batch_events: int, in_flight: int, refuse: Set[int], poison: Set[str]):
        self.world = world
        self.max_batch_events, self.max_batch_bytes, self.max_in_flight = batch_events, 10**9, in_flight
        self.refuse, self.poison = refuse, poison
        self.calls = 0
        self.run = 0
        self.stored: Dict[str, int] = {}
        self.accepted: List[Tuple[int, str]] = []
        self.rejected: List[Tuple[int, str]] = []
        self.refused_batches: List[Tuple[int, List[str]]] = []
        self.lock = threading.Lock()

    def send(self, batch: Sequence[Event]) -> SendResult:
        dies = self.world.step()
        if dies and not self.world.send_stored_first:
            raise Crash()
        with self.lock:
            self.calls += 1
            if self.calls in self.refuse and not dies:
                self.refused_batches.append((self.run, [e.id for e in batch]))
                raise SinkError("refused on purpose", retryable=True)
            rejected = [Rejection(e, "poison") for e in batch if e.id in self.poison]
            for event in batch:
                if event.id in self.poison:
                    self.rejected.append((self.run, event.id))
                else:
                    self.stored[event.id] = self.stored.get(event.id, 0) + 1
                    self.accepted.append((self.run, event.id))
        if dies:
            raise Crash()  # stored, but the process died before it heard back
        return SendResult(len(batch) - len(rejected), rejected)

    def close(self) -> None:
        pass


class LakeSink(IdempotentSink):
    """A data lake's sink (Security Lake's shape): a batch is written as objects (two events each, in
    the order of their ids: a batch formed otherwise groups them otherwise), each named by a digest of
    its ids, so an object written again overwrites itself; each object's write is a step of the world
    (the process may die between two, or with one stored), and a refused batch fails after writing
    half its objects, the first included. ``objects`` is the lake: key -> ids. ``object_keys`` and
    ``held_by`` let the run journal a batch's objects."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.objects: Dict[str, List[str]] = {}

    def _groups(self, batch: Sequence[Event]) -> List[Tuple[str, List[str]]]:
        ids = sorted(e.id for e in batch if e.id not in self.poison)
        pairs = [ids[i : i + 2] for i in range(0, len(ids), 2)]
        return [(f"obj/{ids_digest(pair)}", pair) for pair in pairs]

    def object_keys(self, batch: Sequence[Event]) -> List[str]:
        return [key for key, _ in self._groups(batch)]

    def held_by(self, key: str) -> Optional[List[str]]:
        with self.lock:
            return self.objects.get(key)

    def send(self, batch: Sequence[Event]) -> SendResult:
        with self.lock:
            self.calls += 1
            refused = self.calls in self.refuse
        groups = self._groups(batch)
        for place, (key, ids) in enumerate(groups):
            if refused and place == (len(groups) + 1) // 2:
                with self.lock:
                    self.refused_batches.append((self.run, [e.id for e in batch]))
                raise SinkError("refused on purpose, some objects written", retryable=True)
            dies = self.world.step()
            if dies and not self.world.send_stored_first:
                raise Crash()
            with self.lock:
                self.objects[key] = ids
            if dies:
                raise Crash()
        rejected = [Rejection(e, "poison") for e in batch if e.id in self.poison]
        with self.lock:
            self.rejected += [(self.run, r.event.id) for r in rejected]
            self.accepted += [(self.run, e.id) for e in batch if e.id not in self.poison]
        return SendResult(len(batch) - len(rejected), rejected)

    def rows(self) -> Dict[str, int]:
        """id -> how many rows of the lake hold it."""
        return dict(Counter(i for ids in self.objects.values() for i in ids))


class ListSource:
    """``trails`` maps a record (its ``id()``) to the streams whose trails hold it; by default its
    ``user``'s only. With ``honour_start`` the service answers only the records at or after the
    start a pass asks for (a poll reads from the watermark minus the tie margin)."""

    def __init__(
        self,
        records: List[dict],
        order: str,
        page_size: int,
        repeat_every: int,
        world=None,
        trails: Optional[Dict[int, Set[str]]] = None,
        honour_start: bool = False,
    ) -> None:
        self.records, self.order, self.page_size, self.repeat_every = records, order, page_size, repeat_every
        self.world = world
        self.trails = trails or {}
        self.honour_start = honour_start

    def pages(self, stream, start_us, start_offset):
        if self.world is not None and self.world.step():
            raise Crash()  # killed mid-fetch
        items = [r for r in self.records if stream.name in self.trails.get(id(r), {r["user"]})]
        if self.honour_start and start_us is not None:
            since = format_us(start_us)  # canonical created_at text compares as time
            items = [r for r in items if not r["created_at"][:1].isdigit() or r["created_at"] >= since]
        if self.order == "asc":
            items.sort(key=lambda r: r["created_at"])
        elif self.order == "desc":
            items.sort(key=lambda r: r["created_at"], reverse=True)
        if self.repeat_every:  # the service returns some records twice
            items = items + items[:: self.repeat_every]
        for i in range(0, len(items), self.page_size):
            yield items[i : i + self.page_size]


def formatter(record, options) -> Event:
    return Event(record.event_id, record.ts_us, b"{}")


def run_context(
    source, store, sink, quarantine, limits, streams, format_event=formatter, **extra: Any
) -> RunContext:
    """A RunContext over these parts, with the test formatter (or ``format_event``) and the tenant's
    delivered-ids index."""
    return RunContext(
        source=source,
        store=store,
        sink=sink,
        formatter=lambda: format_event,
        quarantine=quarantine,
        limits=limits,
        claims=Claims.load(store, INDEX_WINDOW_S, limits.tie_margin_s),
        options=NormalizeOptions(ingest_time_us=0),
        **extra,
    )


def unplaceable_record(n: int, user: str) -> dict:
    """A record of ``user`` no run can place in time (its created_at is not a time)."""
    return {
        "action": "user.login",
        "user": user,
        "object": user,
        "changes": {"bad": n},
        "created_at": f"n/a {n}",
    }


def make_records(offsets: List[int], base_us: int, user: str = STREAM.name) -> List[dict]:
    # Offsets are seconds; a small range forces many equal timestamps.
    return [
        {
            "action": "user.login",
            "filterable_action": "user.login",
            "user": user,
            "object": user,
            "changes": {"n": i},
            "created_at": format_us(base_us + off * 1_000_000),
        }
        for i, off in enumerate(offsets)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    trails=st.lists(st.lists(st.integers(0, 40), max_size=30), min_size=1, max_size=len(USERS)),
    data=st.data(),
    runs=st.integers(1, 4),
    order=st.sampled_from(["asc", "desc", "as-is"]),
    page_size=st.integers(1, 25),
    repeat_every=st.sampled_from([0, 1, 3]),
    batch_events=st.integers(1, 7),
    in_flight=st.integers(1, 3),
    concurrency=st.integers(1, 3),
    linger_s=st.sampled_from([0.0, 5.0]),
    cap=st.integers(1, 30),
    refuse=st.sets(st.integers(1, 12), max_size=3),
    lose_race=st.sets(st.integers(1, 12), max_size=2),
    crash_at=st.one_of(st.none(), st.integers(1, 40)),
    send_stored_first=st.booleans(),
    lake=st.booleans(),
)
def test_nothing_lost_nothing_twice(
    trails,
    data,
    runs,
    order,
    page_size,
    repeat_every,
    batch_events,
    in_flight,
    concurrency,
    linger_s,
    cap,
    refuse,
    lose_race,
    crash_at,
    send_stored_first,
    lake,
):
    base_us = now_us() - 3600 * 1_000_000
    good = [r for user, offsets in zip(USERS, trails) for r in make_records(offsets, base_us, user)]
    # About one record in eight cannot be placed in time (placed anywhere in its stream's trail).
    bad = [unplaceable_record(i, r["user"]) for i, r in enumerate(good) if data.draw(st.integers(0, 7)) == 0]
    records = good + bad
    streams = [Stream("user", user) for user in USERS[: len(trails)]]
    names = {s.key: s.name for s in streams}
    # Most records are in their own stream's trail only; some in another's too (copies), some in
    # another's only (their own trail lacks them), and some copies leave their own trail after the
    # run they arrive in (a trail is not obliged to stay consistent either).
    placed: Dict[int, Set[str]] = {}
    fleeting: Dict[int, Set[str]] = {}  # trails after the run the record arrives in
    for r in good:
        other = data.draw(st.sampled_from(sorted(names.values())))
        kind = data.draw(st.integers(0, 4))
        placed[id(r)] = [{r["user"]}, {r["user"]}, {r["user"], other}, {other}, {r["user"], other}][kind]
        if kind == 4:
            fleeting[id(r)] = {other}
    trails_of = {event_id(r): placed[id(r)] for r in good}
    trails_of.update({unplaceable(r, "").event.id: {r["user"]} for r in bad})
    # Each record becomes visible at some run: later ones model late-arriving records, which
    # may be older than records already delivered (the look-back window covers them).
    # A short window (the watermark passes a skipped copy by more than it) with no late records,
    # which it would not cover.
    window_s = data.draw(st.sampled_from([7200, 10]))
    # A service that honours start_date is read from the watermark minus the tie margin: records
    # that come late, older than that, are a deep re-sweep's, so it has none.
    honour_start = data.draw(st.booleans())
    late = window_s > 40 and not honour_start
    arrive = [data.draw(st.integers(0, runs - 1)) if late else 0 for _ in records]
    arrived = {id(r): a for r, a in zip(records, arrive)}
    poison = {event_id(r) for r in good if data.draw(st.integers(0, 9)) == 0}
    world = World(crash_at, send_stored_first)
    quarantine = WorldQuarantine(world)
    store = WorldStore(world, lose_race, quarantine, {unplaceable(r, "").event.id for r in bad})
    sink = (LakeSink if lake else IdempotentSink)(world, batch_events, in_flight, refuse, poison)
    limits = Limits(initial_lookback_s=86400, window_s=window_s, max_records_per_pass=cap)
    clean: Dict[int, Set[str]] = defaultdict(set)  # run -> streams that finished it without error

    def one_run(run: int, visible: List[dict]) -> None:
        sink.run = store.run = quarantine.run = run
        now_in = {
            i: fleeting[i] if i in fleeting and run > arrived[i] else where for i, where in placed.items()
        }
        source = ListSource(visible, order, page_size, repeat_every, world, now_in, honour_start)
        ctx = run_context(source, store, sink, quarantine, limits, streams, linger_s=linger_s)
        report = RunReport(started="now")
        try:
            run_streams(ctx, streams, concurrency, report)
        except Crash:
            return  # a dead process reports nothing
        clean[run] = {names[s.stream] for s in report.streams if s.ok}
        refused = {name for r, ids in sink.refused_batches if r == run for i in ids for name in trails_of[i]}
        for s in report.streams:
            # A refused batch or a lost race fails only the streams concerned.
            assert s.ok or names[s.stream] in refused or (run, s.stream) in store.lost, s.error
            kept = sum(1 for r, key, _ in quarantine.records if r == run and key == s.stream)
            assert s.invalid == kept  # once per run, however often read
        # Reports count what the sink did with the run's events (which stream shipped a copy is the
        # run's choice).
        assert sum(s.shipped for s in report.streams) == sum(1 for r, _ in sink.accepted if r == run)
        assert sum(s.quarantined for s in report.streams) == sum(
            1 for r, _, _ in quarantine.records if r == run
        ) + sum(1 for r, _ in sink.rejected if r == run)

    for run in range(runs):
        one_run(run, [r for r, a in zip(records, arrive) if a <= run])
    # Enough clean runs to drain whatever failures and caps left behind.
    world.crash_at, world.dead = None, False
    sink.refuse, store.lose_race = set(), set()
    longest = max(len(t) for t in trails)
    for run in range(runs, runs + longest // max(1, min(cap, batch_events)) + 3):
        one_run(run, records)

    kept = [(run, rid) for run, _, rid in quarantine.records]
    # Sorted stably: in order within each run.
    handled = sorted(sink.accepted + sink.rejected + kept, key=lambda item: item[0])
    landed = {i for _, i in handled}
    if isinstance(sink, LakeSink):
        # Exactly once in the lake: a row in one object only, whatever a crash or a refusal cut in
        # the middle of a batch (its objects journaled, read back by the next run: delivery/journal.py).
        rows = sink.rows()
        assert [i for i, n in rows.items() if n > 1] == [], "a row in two objects"
        assert not set(rows) & poison, "a rejected event was written"
        landed |= set(rows)  # a cut batch's objects count as delivered without a send that returned
    assert landed == set(trails_of), "a record was lost"
    assert not set(sink.stored) & poison, "a rejected event was stored"
    # Nothing twice: once a run handled a record and every stream whose trail holds it finished that
    # run cleanly, no later run (nor the same one) sends or quarantines it again.
    first_clean: Dict[str, int] = {}
    for run, rid in handled:
        if rid in first_clean:
            raise AssertionError(f"{rid} sent again in run {run} after run {first_clean[rid]} committed it")
        if trails_of[rid] <= clean.get(run, set()):
            first_clean[rid] = run


def test_run_stream_alone_delivers_and_commits_each_pass(tmp_path) -> None:
    """run_stream called on its own (no run_streams around it) still ships and commits every pass."""
    records = make_records(list(range(10)), now_us() - 3600 * 1_000_000)
    store, sink = MemoryStore(), MemorySink(max_batch_events=3)
    limits = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=4)
    source, quarantine = ListSource(records, "asc", 4, 0), LocalQuarantine(str(tmp_path))
    ctx = run_context(source, store, sink, quarantine, limits, [STREAM])
    report = run_stream(ctx, STREAM)
    assert report.ok and report.shipped == 10 and report.passes == 3
    assert sorted(sink.delivered) == sorted(event_id(r) for r in records)
    assert store.load(STREAM.key).state.delivered_total == 10


def test_late_record_beyond_window_is_not_new() -> None:
    """The documented limit: a record older than watermark minus window is skipped, not re-sent."""
    base_us = now_us() - 3600 * 1_000_000
    early, late = make_records([100, 0], base_us)
    store, sink = MemoryStore(), MemorySink()
    limits = Limits(initial_lookback_s=86400, window_s=10, max_records_per_pass=100)

    def run(visible: List[Any]):
        source = ListSource(visible, "asc", 10, 0)
        ctx = run_context(source, store, sink, LocalQuarantine("unused"), limits, [STREAM])
        return run_stream(ctx, STREAM)

    run([early])
    report = run([early, late])
    assert sink.delivered == [event_id(early)]
    assert report.skipped == 2 and report.new == 0


def test_a_copy_whose_claim_failed_stays_new_to_the_stream_that_skipped_it() -> None:
    """Alice's stream claims a record that Bob's trail holds too, and the sink refuses its batch;
    Bob's stream skipped the copy and ships a record well past it. Next run only Bob's trail holds
    the copy: his state must not have passed it (its watermark stays within the window of it)."""
    alice, bob = (Stream("user", u) for u in USERS[:2])
    copy, later = make_records([0, 30], now_us() - 3600 * 1_000_000, alice.name)
    store, sink = MemoryStore(), MemorySink(max_batch_events=1, fail_sends=[1])
    limits = Limits(initial_lookback_s=86400, window_s=10, max_records_per_pass=100)

    def run(trails: Dict[int, Set[str]]) -> RunReport:
        source = ListSource([copy, later], "asc", 10, 0, trails=trails)
        ctx = run_context(source, store, sink, LocalQuarantine("unused"), limits, [alice, bob], linger_s=0.0)
        report = RunReport(started="now")
        run_streams(ctx, [alice, bob], 1, report)
        return report

    first = run({id(copy): {alice.name, bob.name}, id(later): {bob.name}})
    assert [s.ok for s in first.streams] == [False, True] and sink.delivered == [event_id(later)]
    second = run({id(copy): {bob.name}, id(later): {bob.name}})
    assert second.ok and sink.delivered == [event_id(later), event_id(copy)]
