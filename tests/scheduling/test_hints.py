"""Copies a delivery leaves in other streams: a user stream that ships a domain record, or an org-wide
stream that ships an answer's record, makes the streams holding copies due while the index of
delivered ids still holds them. Over a real store (a local directory), through the scheduler's own
calls."""

from __future__ import annotations

from forwarder.records import parse_record
from forwarder.report import RunReport, StreamReport
from forwarder.scheduling import scheduler as scheduler_module
from forwarder.scheduling.hints import Homes, due_within
from forwarder.scheduling.marks import Marks
from forwarder.scheduling.orgindex import Hints, IndexRead
from forwarder.scheduling.policy import Policy
from forwarder.scheduling.scheduler import Scheduler
from forwarder.state.local import LocalStore
from forwarder.streams import Stream
from forwarder.timeutil import format_us

T0 = 1_800_000_000
POLICY = Policy(10, 120, 60, 600, None, None, 3600, 6000)
WINDOW_S = 300
ALICE, BOB, DOMAIN = (
    Stream("user", "Alice@x.example"),
    Stream("user", "bob@x.example"),
    Stream("domain", "x.example"),
)
PLAN = [ALICE, BOB, DOMAIN]


def dmarc(actor: str = ALICE.name):
    raw = {
        "action": "Updated DMARC record",
        "filterable_action": "domain.update",
        "user": actor,
        "object": DOMAIN.name,
        "created_at": format_us(T0 * 1_000_000),
    }
    return parse_record(raw, "user")


class Clock:
    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now


def run(tmp_path, clock, shipped, polled=None):
    """One run: the scheduler chooses, ``shipped`` (stream -> records) reach the sink, it finishes;
    the next run's choice ``INTERVAL`` later."""
    scheduler = Scheduler.for_store(LocalStore(str(tmp_path)), POLICY, clock, window_s=WINDOW_S)
    scheduler.load()
    scheduler.choose(PLAN)
    reports = []
    for stream in polled or PLAN:
        records = shipped.get(stream, [])
        scheduler.seen(stream, records)
        reports.append(StreamReport(stream.key, new=len(records)))
    scheduler.finish(PLAN, RunReport("t", streams=reports), None)
    clock.now += POLICY.interval_s
    following = Scheduler.for_store(LocalStore(str(tmp_path)), POLICY, clock, window_s=WINDOW_S)
    following.load()
    return following


def test_a_domain_stream_holding_a_copy_a_user_stream_shipped_comes_due_within_the_window(tmp_path):
    clock = Clock()
    run(tmp_path, clock, {})
    # The domain stream not polled in the run the user stream shipped its record.
    after = run(tmp_path, clock, {ALICE: [dmarc()]}, polled=[ALICE, BOB])
    polled = after.book.streams[DOMAIN.key].polled_s
    assert polled is not None and polled <= clock.now + WINDOW_S - POLICY.domain_revisit_s
    runs, due = 0, False
    while not due:  # runs every interval, none of them polling it, until it is due
        runs += 1
        due = DOMAIN in after.choose(PLAN).order
        clock.now += POLICY.interval_s
    assert runs * POLICY.interval_s <= WINDOW_S


def test_a_copy_settled_in_the_same_run_hastens_nothing(tmp_path):
    clock = Clock()
    run(tmp_path, clock, {})
    before = run(tmp_path, clock, {}).book.streams[DOMAIN.key]
    after = run(tmp_path, clock, {ALICE: [dmarc()]})  # the domain stream polled in that run too
    assert after.book.streams[DOMAIN.key].polled_s >= before.polled_s


def test_due_within_only_ever_moves_a_poll_time_earlier():
    marks = {DOMAIN.key: Marks(T0, None), "domain/y.example": Marks(None, None)}
    moved = due_within(marks, [DOMAIN.key, "domain/y.example"], T0, 7200, POLICY)
    assert moved == marks  # a bound of 600 s is within 7,200 s anyway; never polled: due anyway
    moved = due_within(marks, [DOMAIN.key], T0, 60, POLICY)
    assert moved[DOMAIN.key] == Marks(T0 + 60 - 600 - 20, None)


def test_a_stream_an_org_wide_answer_named_comes_due_within_the_window_shipped_or_not(tmp_path, monkeypatch):
    clock = Clock()
    run(tmp_path, clock, {})
    hints = Hints(named=[BOB.key], reads={"user": IndexRead(0, 0, 0, set())}, sourced={BOB.key: "user"})
    monkeypatch.setattr(scheduler_module, "consult", lambda *args, **kwargs: hints)
    scheduler = Scheduler.for_store(LocalStore(str(tmp_path)), POLICY, clock, window_s=WINDOW_S)
    scheduler.load()
    scheduler.consult(None, PLAN, lambda i: False, page_limit=1, max_pages=1, window_s=1, probe_since_us=0)
    scheduler.choose(PLAN)
    org = StreamReport("user/*")  # the run polled none but it, which shipped nothing (not new to it, say)
    scheduler.finish(PLAN, RunReport("t", streams=[org]), None)
    polled = scheduler.book.streams[BOB.key].polled_s
    assert polled <= clock.now + WINDOW_S - max(POLICY.cold_revisit_s, POLICY.domain_revisit_s)


def test_homes_note_the_copies_a_user_or_org_wide_stream_leaves():
    homes, planned = Homes(), {s.key for s in PLAN}
    homes.note(DOMAIN, [dmarc()], planned)  # the domain stream's own delivery: no copy to hasten there
    assert homes.copies == set()
    homes.note(ALICE, [dmarc()], planned)
    assert homes.copies == {DOMAIN.key}
    homes.note(Stream("user", "*"), [dmarc()], planned)
    assert homes.copies == {DOMAIN.key, "user/alice@x.example"}
