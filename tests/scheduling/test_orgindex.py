"""The org-wide index as the scheduler uses it: the plan it makes (named streams first, the rest
backstops), the records it should have named, and its read against the simulator when the service
pages it wrongly, refuses it, or a run leaves named streams unread."""

from __future__ import annotations

import pytest

from forwarder.api.client import ApiClient, Credentials
from forwarder.records import AuditRecord, event_id
from forwarder.report import RunReport, StreamReport
from forwarder.retry import RetryPolicy
from forwarder.scheduling import scheduler as scheduler_module
from forwarder.scheduling.marks import Book, IndexMark, Marks
from forwarder.scheduling.orgindex import (
    LATE_S,
    ORG_NAME,
    PROBE_AGAIN_S,
    UNPROVEN_INTERVALS,
    Hints,
    IndexRead,
    IndexSource,
    active,
    consult,
    plan_indexed,
    standing,
    unexpected,
)
from forwarder.scheduling.policy import Policy
from forwarder.scheduling.scheduler import Scheduler
from forwarder.sim.generate import generate_org, generate_wide_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.state.local import LocalStore
from forwarder.streams import Stream, plan_streams
from forwarder.timeutil import now_us, parse_iso
from tests.fakes import NO_WAITS

# The waits between tries are handed in and not slept: a retry tries again at once.
UNWAITED = RetryPolicy(sleep=NO_WAITS.sleep)

POLICY = Policy(10, 120, 60, 600, None, None, 3600, 6000)
T0 = 1_800_000_000
US = 1_000_000


def _streams(n_users, n_domains):
    return [Stream("user", f"u{i}@x") for i in range(n_users)] + [
        Stream("domain", f"d{i}.example") for i in range(n_domains)
    ]


def test_named_streams_come_first_and_the_rest_of_an_indexed_type_are_backstops():
    plan = _streams(30, 30)
    # Every stream polled and delivering a run ago: hot, without the index.
    marks = {s.key: Marks(T0 - 10, T0 - 10) for s in plan}
    hints = Hints(named=["user/u7@x", "domain/d3.example"], reads={"user": IndexRead(0, 0, 0, set())})
    chosen = plan_indexed(plan, marks, T0, POLICY, hints)
    assert [s.key for s in chosen.order[:2]] == ["user/u7@x", "domain/d3.example"]
    rest = chosen.order[2:]
    # Users: none hot, a turn within the index's bound (6,000 s at 10 s: 30 users in 599 runs, none
    # this run); domains, not indexed, stay hot (every one of them, but the named one, every run).
    assert [s.object_type for s in rest].count("user") == 0
    assert [s.object_type for s in rest].count("domain") == 29


def test_records_the_index_should_have_named_are_counted():
    read = IndexRead(since_us=50 * US, until_us=100 * US, trusted_us=10 * US, ids={"e" * 64})
    hints = Hints(reads={"user": read})
    stream = Stream("user", "a@x")

    def record(ts_s, eid):
        return AuditRecord({}, eid, ts_s * US, "user")

    records = [record(60, "e" * 64), record(20, "f" * 64), record(101, "a" * 64), record(5, "b" * 64)]
    # In the answer: fine; older than the read but after the index was trusted: lacked by an earlier
    # answer; newer than the span: not yet due in an answer; before it was trusted: a backlog.
    assert unexpected(hints, stream, records, pending=(), first=False) == 1
    assert unexpected(hints, stream, records, pending=("user/a@x",), first=False) == 0
    assert unexpected(hints, stream, records, pending=(), first=True) == 0
    assert unexpected(hints, Stream("domain", "x.example"), records, pending=(), first=False) == 0


def _client(sim):
    return ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET), retry=UNWAITED)


def _consult(sim, book, planned, delivered=lambda i: False, page_limit=200):
    now = now_us()
    return consult(
        _client(sim),
        planned,
        book,
        now,
        delivered=delivered,
        page_limit=page_limit,
        max_pages=50,
        window_s=3600,
        probe_since_us=now - 30 * 86400 * US,
        interval_s=10,
    )


@pytest.fixture(scope="module")
def org():
    org = generate_org(3)
    org.add_activity(40, now_us())
    return org


def _planned(org):
    return plan_streams(("user",), [u.email for u in org.users], [], [])


def test_a_read_names_the_streams_of_undelivered_records_and_moves_the_cursor(org):
    book = Book(orgwide={"user": IndexMark(True, 0, now_us() - 30 * 86400 * US)})
    with Simulator(org, nameless="org-wide") as sim:
        trail = sorted(org.records_for("user", "", now_us()), key=lambda r: r["created_at"])
        delivered = {event_id(r) for r in trail[:-1]}  # all but the newest
        hints = _consult(sim, book, _planned(org), delivered.__contains__)
    assert hints.named == [f"user/{trail[-1]['user'].lower()}"]
    assert hints.calls == 2  # the token, and one page
    mark = book.orgwide["user"]
    assert mark.honoured and mark.cursor_us is not None
    assert now_us() - mark.cursor_us >= LATE_S * US  # asked again next run: records may come late


@pytest.mark.parametrize(
    ("knobs", "why"),
    [
        ({"nameless": "refuse"}, "refused"),
        ({"nameless": "org-wide", "ignore_offset": True}, "offset ignored"),
    ],
)
def test_an_index_that_is_refused_or_pages_wrongly_is_used_no_more(org, knobs, why, caplog):
    since = now_us() - 30 * 86400 * US
    book = Book(orgwide={"user": IndexMark(True, 0, since, since)})
    with Simulator(org, **knobs) as sim:
        hints = _consult(sim, book, _planned(org), page_limit=5)
    assert not hints.reads and not book.orgwide["user"].honoured
    assert any(why in getattr(r, "reason", "") for r in caplog.records)


def test_streams_a_run_left_unread_stay_named(org):
    left = "user/" + org.users[2].email.lower()
    book = Book(orgwide={"user": IndexMark(True, 0, now_us() - 86400 * US)}, pending=(left, "user/gone@x"))
    with Simulator(org, nameless="org-wide") as sim:
        hints = _consult(sim, book, _planned(org), delivered=lambda i: True)  # every record delivered
    assert hints.named == [left]  # a stream no longer planned is not


def test_a_query_not_honoured_is_probed_again_when_due(org):
    book = Book(orgwide={"user": IndexMark(False, int(now_us() / US) + 60)})
    with Simulator(org, nameless="org-wide") as sim:
        hints = _consult(sim, book, _planned(org))
        assert not hints.reads and hints.calls == 0
        book.orgwide["user"] = IndexMark(False, int(now_us() / US) - 1)
        hints = _consult(sim, book, _planned(org))
    assert "user" in hints.reads and book.orgwide["user"].honoured


def test_a_quiet_organization_is_probed_again_after_a_few_intervals_a_refusal_after_hours():
    quiet = generate_wide_org(10, 4)  # no record in the span probed
    for knobs, again in (({"nameless": "org-wide"}, UNPROVEN_INTERVALS * 10), ({}, PROBE_AGAIN_S)):
        book = Book()
        with Simulator(quiet, **knobs) as sim:
            _consult(sim, book, _planned(quiet))
        mark = book.orgwide["user"]
        assert not mark.honoured and abs(mark.probe_at_s - now_us() / US - again) <= 2


def test_a_query_the_probe_could_not_tell_is_probed_again_once_streams_show_records():
    now = T0
    book = Book(orgwide={"user": IndexMark(False, now + 50), "domain": IndexMark(False, now + PROBE_AGAIN_S)})
    active(book, {"user": 1, "domain": 5}, now, 10)
    assert book.orgwide["user"].probe_at_s == now + 50  # one stream: still nothing to prove it by
    assert book.orgwide["domain"].probe_at_s == now + PROBE_AGAIN_S  # refused: hours
    active(book, {"user": 2}, now, 10)
    assert book.orgwide["user"].probe_at_s == now


def test_the_org_wide_streams_ship_the_answers_and_the_streams_they_name_keep_their_place():
    plan = _streams(30, 3)
    marks = {s.key: Marks(T0 - 10, None) for s in plan}
    marks["user/u9@x"] = Marks(None, None)  # never read: due whatever the answer holds
    hints = Hints(
        named=["user/u7@x", "user/u9@x", "user/u8@x"],
        reads={"user": IndexRead(0, 0, 0, set())},
        answers={"user": [{}]},
        sourced={"user/u7@x": "user", "user/u9@x": "user"},  # u8: left unread by an earlier run
    )
    chosen = plan_indexed(plan, marks, T0, POLICY, hints)
    keys = [s.key for s in chosen.order]
    assert keys[:3] == ["user/*", "user/u8@x", "user/u9@x"]
    assert "user/u7@x" not in keys and Stream("user", "u7@x") in chosen.not_due


def test_an_org_wide_stream_reads_its_answer_and_no_other_stream_does():
    answer = [{"created_at": f"2026-01-01T00:00:0{i}Z", "n": i} for i in range(4)]
    inner_asked = []

    class Inner:
        def pages(self, stream, start_us, start_offset):
            inner_asked.append(stream)
            yield []

    source = IndexSource(Inner(), {"user": answer})
    start = parse_iso("2026-01-01T00:00:02Z")
    pages = list(source.pages(Stream("user", ORG_NAME), start, 0))
    assert pages == [answer] and inner_asked == []  # what it has delivered, its state knows
    assert list(source.pages(Stream("domain", ORG_NAME), start, 0)) == [[]]
    assert list(source.pages(Stream("user", "a@x"), start, 0)) == [[]] and inner_asked == [
        Stream("user", "a@x")
    ]


def test_the_answer_ships_only_records_a_planned_stream_returns(org):
    logins = plan_streams(("user",), [u.email for u in org.users], [], ["user.login"])
    book = Book(orgwide={"user": IndexMark(True, 0, now_us() - 30 * 86400 * US)})
    with Simulator(org, nameless="org-wide") as sim:
        hints = _consult(sim, book, logins)
    actions = {r["filterable_action"] for r in hints.answers["user"]}
    assert actions and all(a.startswith("user.login") for a in actions)
    assert len(hints.reads["user"].ids) > len(hints.answers["user"])  # the rest still counts as read


def test_a_stream_cut_short_or_failed_under_the_index_is_polled_first_next_run(tmp_path, monkeypatch):
    plan = _streams(4, 0)
    hints = Hints(reads={"user": IndexRead(0, 0, 0, set())})
    monkeypatch.setattr(scheduler_module, "consult", lambda *args, **kwargs: hints)
    scheduler = Scheduler.for_store(LocalStore(str(tmp_path)), POLICY, lambda: T0, window_s=3600)
    scheduler.consult(None, plan, lambda i: False, page_limit=1, max_pages=1, window_s=1, probe_since_us=0)
    scheduler.choose(plan)
    failed, fine = StreamReport("user/u1@x", error="boom"), StreamReport("user/u2@x")
    scheduler.finish(plan, RunReport("t", streams=[failed, fine]), None)
    assert scheduler.book.pending == ("user/u1@x",)  # not hot under the index: named instead


def test_a_run_handed_its_streams_checks_them_against_the_index_last_reads():
    """A fan-out worker does not read the index: what its last reads covered (trusted, cursor) is
    the span, and a record some named stream holds is excused (that stream is to deliver it)."""
    book = Book(orgwide={"user": IndexMark(True, 0, 100 * US, 10 * US), "domain": IndexMark(False, 0)})
    hints = standing(book)
    assert set(hints.reads) == {"user"}

    def record(ts_s, actor):
        return AuditRecord({"user": actor, "filterable_action": "user.login"}, actor * 8, ts_s * US, "user")

    records = [record(50, "b@x"), record(150, "b@x"), record(5, "b@x")]  # lacked; not asked yet; before
    assert unexpected(hints, Stream("user", "b@x"), records, pending=(), first=False) == 1
    assert unexpected(hints, Stream("user", "b@x"), records, pending=("user/b@x",), first=False) == 0
    dmarc = AuditRecord(
        {"user": "a@x", "filterable_action": "domain.dmarc.update", "object": "x.example"},
        "d" * 64,
        50 * US,
        "domain",
    )
    domain = Stream("domain", "x.example")
    book.orgwide["domain"] = IndexMark(True, 0, 100 * US, 10 * US)
    # Named through its actor's stream: the domain stream holding a copy is no sign of a lie.
    assert unexpected(standing(book), domain, [dmarc], pending=("user/a@x",), first=False) == 0
    assert unexpected(standing(book), domain, [dmarc], pending=(), first=False) == 1
