"""The scheduler's edge over a real store (a local directory): the users cache and its expiry, an
unreadable document, no write when nothing changed, the rate bucket carried from run to run."""

from __future__ import annotations

from forwarder.records import parse_record
from forwarder.report import RunReport, StreamReport
from forwarder.scheduling.policy import Policy
from forwarder.scheduling.scheduler import Scheduler
from forwarder.state.local import LocalStore
from forwarder.streams import Stream

T0 = 1_800_000_000.0
POLICY = Policy(10, 120, 60, 600, None, None, 3600)


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
