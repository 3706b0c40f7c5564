"""The scheduler's edge over a real store (a local directory): the users cache and its expiry, an
unreadable document, no write when nothing changed, the rate bucket carried from run to run."""

from __future__ import annotations

from forwarder.records import AuditRecord, parse_record
from forwarder.report import RunReport, StreamReport
from forwarder.scheduling import scheduler as scheduler_module
from forwarder.scheduling.marks import IndexMark
from forwarder.scheduling.orgindex import LATE_S, Hints, IndexRead
from forwarder.scheduling.policy import Policy
from forwarder.scheduling.scheduler import Scheduler
from forwarder.state.local import LocalStore
from forwarder.streams import Stream

T0 = 1_800_000_000.0
US = 1_000_000
POLICY = Policy(10, 120, 60, 600, None, None, 3600, 6000)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def open_scheduler(tmp_path, clock):
    scheduler = Scheduler.for_store(LocalStore(str(tmp_path)), POLICY, clock)
    scheduler.load()
    return scheduler


def test_the_users_list_is_reused_until_the_cache_expires_and_leavers_are_still_pulled(tmp_path):
    clock, fetched = Clock(), []

    def fetch(names):
        return lambda: fetched.append(names) or list(names)

    first = open_scheduler(tmp_path, clock)
    assert first.users(fetch(["a@x", "b@x"])) == ["a@x", "b@x"]
    first.finish([], RunReport("t"), None)
    clock.now += 3599
    assert open_scheduler(tmp_path, clock).users(fetch(["a@x"])) == ["a@x", "b@x"]  # cached
    clock.now += 1
    later = open_scheduler(tmp_path, clock)
    assert later.users(fetch(["a@x"])) == ["a@x", "b@x"]  # b left the list: pulled a while longer
    assert fetched == [["a@x", "b@x"], ["a@x"]]


def test_an_unreadable_document_counts_as_empty_and_names_itself(tmp_path, caplog):
    (tmp_path / ".scheduler").write_text("{nope")
    scheduler = open_scheduler(tmp_path, Clock())
    plan = [Stream("user", "a@x"), Stream("user", "b@x")]
    assert scheduler.choose(plan).order == plan  # every stream due
    scheduler.finish(plan, RunReport("t", streams=[StreamReport("user/a@x")]), None)
    assert (tmp_path / ".scheduler").read_text() == "{nope"  # not written over blindly
    assert str(tmp_path / ".scheduler") in caplog.text


def test_a_document_of_another_schema_is_replaced(tmp_path):
    LocalStore(str(tmp_path)).slot("scheduler").put({"schema": 99}, None)
    clock = Clock()
    scheduler = open_scheduler(tmp_path, clock)
    plan = [Stream("user", "a@x")]
    scheduler.finish(plan, RunReport("t", streams=[StreamReport("user/a@x")]), None)
    # a first poll, dated back by a share of the bound (spreading first reads over the lap)
    assert T0 - 60 < open_scheduler(tmp_path, clock).book.streams["user/a@x"].polled_s <= T0


def test_a_run_with_nothing_to_remember_writes_nothing(tmp_path):
    clock = Clock()
    plan = [Stream("user", "a@x")]
    report = RunReport("t", streams=[StreamReport("user/a@x")])
    first = open_scheduler(tmp_path, clock)
    first.choose(plan)
    first.finish(plan, report, None)
    stamp = (tmp_path / ".scheduler").stat().st_mtime_ns, (tmp_path / ".scheduler").stat().st_ino
    clock.now += 1  # back to back: a run right after the last moves no poll time
    second = open_scheduler(tmp_path, clock)
    second.choose(plan)
    second.finish(plan, report, None)
    assert ((tmp_path / ".scheduler").stat().st_mtime_ns, (tmp_path / ".scheduler").stat().st_ino) == stamp


def test_the_rate_bucket_starts_where_the_last_run_left_it(tmp_path):
    clock = Clock()
    open_scheduler(tmp_path, clock).finish([], RunReport("t"), -4.0)  # 4 requests promised ahead
    clock.now += 1
    assert open_scheduler(tmp_path, clock).bucket(rate=2.0) == -2.0
    assert Scheduler(None, POLICY, clock).bucket(rate=2.0) is None  # nothing known: a full bucket


def test_a_stream_cut_short_or_failed_is_polled_again_next_run(tmp_path):
    clock = Clock()
    plan = [Stream("user", f"{name}@x") for name in "abcdefghij"]
    first = open_scheduler(tmp_path, clock)
    first.choose(plan)
    streams = [StreamReport(s.key) for s in plan]
    streams[0].stopped, streams[1].error, streams[2].truncated = True, "boom", True
    first.finish(plan, RunReport("t", streams=streams), None)
    clock.now += 10
    later = open_scheduler(tmp_path, clock).choose(plan)
    assert [s.key for s in later.order[:3]] == [s.key for s in plan[:3]]  # hot: read again
    assert later.hot == 3


def domain_record(actor):
    raw = {
        "action": "domain.update",
        "user": actor,
        "object": "x.example",
        "created_at": "2026-01-01T00:00:00Z",
    }
    return parse_record(raw, "domain")


def test_an_actor_seen_in_a_domain_stream_makes_its_user_stream_hot_not_the_domain_stream(tmp_path):
    clock = Clock()
    admin, other, domain = Stream("user", "admin@x"), Stream("user", "other@x"), Stream("domain", "x.example")
    plan = [admin, other, domain]
    first = open_scheduler(tmp_path, clock)
    first.choose(plan)
    first.seen(domain, [domain_record("Admin@X")])
    report = RunReport(
        "t", streams=[StreamReport(admin.key), StreamReport(other.key), StreamReport(domain.key, new=1)]
    )
    first.finish(plan, report, None)
    clock.now += 10
    chosen = open_scheduler(tmp_path, clock).choose(plan)
    # the domain stream is a backstop: admin's own stream returns admin's domain records from now on
    assert chosen.hot == 1 and chosen.order[0] == admin


def test_a_domain_stream_that_delivered_records_of_actors_without_a_stream_is_hot(tmp_path):
    clock = Clock()
    admin, domain = Stream("user", "admin@x"), Stream("domain", "x.example")
    first = open_scheduler(tmp_path, clock)
    first.choose([admin, domain])
    first.seen(domain, [domain_record("admin@x")])
    first.seen(domain, [domain_record("api-client")])  # a later pass: an actor with no user stream
    report = RunReport("t", streams=[StreamReport(admin.key), StreamReport(domain.key, new=2)])
    first.finish([admin, domain], report, None)
    clock.now += 10
    chosen = open_scheduler(tmp_path, clock).choose([admin, domain])
    assert chosen.hot == 2


def test_under_a_trusted_index_streams_are_backstops_within_its_bound_and_a_lie_restores_the_usual_ones(
    tmp_path, monkeypatch
):
    """30 user streams, runs every 10 s: while the org-wide index is trusted each is polled within
    its bound (6,000 s), about once a lap, not within the cold bound (60 s); a stream holding a
    record the answers lacked is polled by that backstop, the index is demoted, and from the next
    run on every stream is polled within the cold bound again."""
    plan = [Stream("user", f"u{i:02}@x") for i in range(30)]
    liar = plan[17]
    lie = AuditRecord({}, "e" * 64, int((T0 + 100) * US), "user")  # in no answer

    def consult(client, planned, book, now_us, **kwargs):
        if not book.orgwide["user"].honoured:
            return Hints()
        return Hints(reads={"user": IndexRead(now_us - 10 * US, now_us - LATE_S * US, int(T0 * US), set())})

    monkeypatch.setattr(scheduler_module, "consult", consult)
    clock, polls, per_run, demoted = Clock(), {s.key: [] for s in plan}, [], None
    for run in range(700):
        scheduler = open_scheduler(tmp_path, clock)
        if run == 0:  # every stream's first read; the index found honoured
            scheduler.book.orgwide["user"] = IndexMark(True, 0, None, int(T0 * US))
        scheduler.consult(
            None, plan, lambda i: False, page_limit=1, max_pages=1, window_s=1, probe_since_us=0
        )
        chosen = scheduler.choose(plan)
        for stream in chosen.order:
            polls[stream.key].append(clock.now)
            if stream == liar and len(polls[liar.key]) == 2:  # its first backstop poll delivers it
                scheduler.seen(stream, [lie])
        per_run.append(len(chosen.order))
        scheduler.finish(plan, RunReport("t", streams=[StreamReport(s.key) for s in chosen.order]), None)
        if demoted is None and not scheduler.book.orgwide["user"].honoured:
            demoted = run
        clock.now += 10
    assert demoted is not None and 10 * demoted <= POLICY.index_revisit_s  # caught within the bound
    # Before: a lap of 30 streams in 6,000 s, one poll a run at most (the cold bound: 6 a run).
    assert max(per_run[1 : demoted + 1]) == 1 and sum(per_run[1 : demoted + 1]) <= demoted * 30 / 599 + 2
    for times in polls.values():
        before = [t for t in times if t <= T0 + 10 * demoted]
        assert all(b - a <= POLICY.index_revisit_s for a, b in zip(before, before[1:]))
    # After: the next run polls every stream not polled within the cold bound, at once; then each
    # within it.
    after = demoted + 1
    late = [
        k
        for k, times in polls.items()
        if T0 + 10 * after - max(t for t in times if t <= T0 + 10 * demoted) + 10 > POLICY.cold_revisit_s
    ]
    assert per_run[after] >= len(late) >= 25
    for times in polls.values():
        since = [t for t in times if t >= T0 + 10 * after] + [T0 + 10 * 699]
        assert since[0] == T0 + 10 * after or since[0] - (T0 + 10 * demoted) <= POLICY.cold_revisit_s
        assert all(b - a <= POLICY.cold_revisit_s for a, b in zip(since, since[1:]))


def test_a_run_handed_its_streams_unnames_what_it_read_and_demotes_an_index_that_lacked_records(tmp_path):
    """A fan-out worker (no ``consult``): the streams it read cleanly are named no more, one that
    failed stays named, and a record its index's last reads should have held demotes the index."""
    clock = Clock()
    plan = [Stream("user", f"{name}@x") for name in "abc"]
    first = open_scheduler(tmp_path, clock)
    first.finish(plan, RunReport("t", streams=[StreamReport(s.key) for s in plan]), None)  # polled once
    first = open_scheduler(tmp_path, clock)
    first.book.orgwide["user"] = IndexMark(True, 0, int((T0 - 60) * US), int((T0 - 3600) * US))
    first.book.pending = ("user/a@x", "user/b@x")
    first.finish(plan, RunReport("t"), None)
    clock.now += 10
    worker = open_scheduler(tmp_path, clock)
    worker.seen(plan[0], [AuditRecord({}, "a" * 64, int((T0 - 600) * US), "user")])  # named: expected
    report = RunReport("t", streams=[StreamReport("user/a@x", new=1), StreamReport("user/b@x", error="boom")])
    worker.finish(plan, report, None)
    assert open_scheduler(tmp_path, clock).book.pending == ("user/b@x",)
    assert open_scheduler(tmp_path, clock).book.orgwide["user"].honoured
    clock.now += 10
    worker = open_scheduler(tmp_path, clock)
    worker.seen(plan[2], [AuditRecord({}, "c" * 64, int((T0 - 600) * US), "user")])  # named by nothing
    worker.finish(plan, RunReport("t", streams=[StreamReport("user/c@x", new=1)]), None)
    assert not open_scheduler(tmp_path, clock).book.orgwide["user"].honoured
