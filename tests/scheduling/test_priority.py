"""Which streams a run polls: hot ones every run, the others in turns within their revisit bound."""

from __future__ import annotations

from typing import Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forwarder.scheduling.marks import Marks
from forwarder.scheduling.policy import Policy
from forwarder.scheduling.priority import Outcome, plan_run, record_run
from forwarder.streams import Stream

INTERVAL = 10
POLICY = Policy(INTERVAL, 120, 60, 600, None, None, 3600, 6000)
T0 = 1_800_000_000


def users(n: int) -> List[Stream]:
    return [Stream("user", f"u{i:04}@example.com") for i in range(n)]


def domains(n: int) -> List[Stream]:
    return [Stream("domain", f"d{i:04}.example") for i in range(n)]


def test_a_first_run_polls_every_stream_and_the_next_only_the_turns():
    plan = users(40) + domains(60)
    first = plan_run(plan, {}, T0, POLICY)
    assert len(first.order) == 100 and first.not_due == []
    marks = record_run({}, [s.key for s in plan], Outcome(polled={s.key for s in plan}), T0, POLICY)
    second = plan_run(plan, marks, T0 + INTERVAL, POLICY)
    # 60 s bound at 10 s: a lap over the users fits in 5 runs (8 a run), the domains' in 59 (1.02 a
    # run: one, and a second now and then)
    assert [s.object_type for s in second.order] == ["user"] * 8 + ["domain"]
    assert len(second.not_due) == 91


def test_a_fractional_turn_is_spread_over_the_runs_not_rounded_up_in_each():
    plan = domains(60)
    marks = record_run({}, [s.key for s in plan], Outcome(polled={s.key for s in plan}), T0, POLICY)
    turns = []
    for run in range(1, 119):  # two laps: 59 runs each (600 s at 10 s, less one run of slack)
        now = T0 + run * INTERVAL
        chosen = plan_run(plan, marks, now, POLICY)
        turns.append(len(chosen.order))
        marks = record_run(
            marks, [s.key for s in plan], Outcome(polled={s.key for s in chosen.order}), now, POLICY
        )
    assert set(turns) <= {1, 2} and sum(turns) <= 2 * 60 + 2  # two laps' worth, where rounding up took 236


def test_a_run_a_little_late_takes_a_little_larger_turn():
    plan = users(360)
    marks = record_run({}, [s.key for s in plan], Outcome(polled={s.key for s in plan}), T0, POLICY)
    on_time = plan_run(plan, marks, T0 + INTERVAL, POLICY, cadence_s=INTERVAL)
    late = plan_run(plan, marks, T0 + INTERVAL, POLICY, cadence_s=INTERVAL + 1)
    assert on_time.needed == 72  # a lap in 5 runs
    assert late.needed == 81  # in 60 / 11 - 1 runs: not a whole run less (90)


def test_hot_streams_come_first_and_the_budget_keeps_room_for_the_turns():
    plan = users(40)
    polled = {s.key: Marks(T0, None) for s in plan}
    hot = {s.key: Marks(T0, T0 - i) for i, s in enumerate(plan[:20])}
    chosen = plan_run(
        plan, {**polled, **hot}, T0 + INTERVAL, Policy(INTERVAL, 120, 60, 600, 10, None, 3600, 6000)
    )
    assert chosen.hot == 20 and chosen.needed == 4  # 20 cold users: a lap in 5 runs
    assert [s.key for s in chosen.order[:6]] == [s.key for s in plan[:6]]  # most recent delivery first
    assert {s.key for s in chosen.order[6:10]} <= {s.key for s in plan[20:]}  # the turns within the budget


def test_a_stream_that_delivered_long_ago_is_cold_again():
    plan = users(2)
    marks = {plan[0].key: Marks(T0, T0 - 121), plan[1].key: Marks(T0, T0)}
    chosen = plan_run(plan, marks, T0 + 1, POLICY)
    assert chosen.hot == 1 and chosen.order[0] == plan[1]


def test_a_stream_that_delivers_often_stays_hot_for_longer_than_the_window():
    now, marks = T0, {}
    steady, once = users(2)
    keys = [steady.key, once.key]
    for _ in range(12):  # a record every 4 runs for a while
        marks = record_run(marks, keys, Outcome(set(keys), {steady.key}), now, POLICY)
        now += 4 * INTERVAL
    marks = record_run(marks, keys, Outcome(set(keys), {once.key}), now, POLICY)

    def hot_at(quiet):  # polled (nothing new) in the run before, so nothing is overdue
        polled = record_run(marks, keys, Outcome(set(keys)), quiet - INTERVAL, POLICY)
        return [s for s in plan_run([steady, once], polled, quiet, POLICY).order if s in {steady, once}][
            : plan_run([steady, once], polled, quiet, POLICY).hot
        ]

    assert hot_at(now + 60) == [steady, once]  # the busier first
    assert hot_at(now + 121) == [steady]  # once: cold again after one window
    assert hot_at(now - 4 * INTERVAL + 4 * 120) == []  # four windows at most


def test_the_likeliest_stream_comes_first():
    a, b = users(2)
    marks = {a.key: Marks(T0, T0, 1.0), b.key: Marks(T0, T0 - 30, 6.0)}  # b: busier, a: more recent
    assert plan_run([a, b], marks, T0 + INTERVAL, POLICY).order == [b, a]


def test_a_sign_of_activity_from_another_stream_heats_as_a_delivery():
    key = "user/a@example.com"
    after = record_run({key: Marks(T0, None)}, [key], Outcome(active={key}), T0 + 10, POLICY)
    assert after[key] == Marks(T0, T0 + 10, 1.0)  # not polled: the poll time stays


def test_a_run_right_after_another_moves_no_time():
    key = "user/a@example.com"
    marks = {key: Marks(T0, T0)}
    done = Outcome(polled={key}, delivered={key})
    assert record_run(marks, [key], done, T0 + 1, POLICY, last_run_s=T0) == marks
    later = record_run(marks, [key], done, T0 + 5, POLICY, last_run_s=T0)[key]
    assert (later.polled_s, later.delivered_s) == (T0 + 5, T0 + 5)
    assert later.heat == pytest.approx(1 + 2 ** (-5 / 120), abs=1e-3)  # the first sign, halved in 120 s
    assert record_run(marks, [], done, T0 + 5, POLICY) == {}  # no longer planned: forgotten


def test_first_polls_are_dated_back_so_streams_read_together_come_due_apart():
    keys = [s.key for s in users(100)]
    marks = record_run({}, keys, Outcome(polled=set(keys)), T0, POLICY)
    ages = sorted(T0 - marks[k].polled_s for k in keys)
    assert ages[0] >= 0 and ages[-1] < 60 - 2 * INTERVAL  # never due before the next run
    assert len({age // 10 for age in ages}) == 4  # spread over the lap, not one cohort
    due_next = plan_run(users(100), marks, T0 + INTERVAL, POLICY)
    assert due_next.needed == 20  # one turn, none overdue


@settings(max_examples=50, deadline=None)
@given(
    n_users=st.integers(0, 60),
    n_domains=st.integers(0, 60),
    bursts=st.lists(st.tuples(st.integers(0, 100), st.integers(0, 119)), max_size=40),
    spare=st.integers(0, 10),
    jitter=st.lists(st.integers(-2, 2), min_size=1, max_size=10),
)
def test_every_stream_is_polled_within_its_revisit_bound(n_users, n_domains, bursts, spare, jitter):
    """Runs about every interval (up to 2 s early or late, also all late: the cadence is measured),
    records arriving in random streams, and a call budget that covers the hot streams and one turn
    of each group at that cadence, each run starting only what its budget allows. Once every stream
    was polled and one lap of the users passed (the first runs poll what was never polled, as much
    as the budget allows), no run needs more than its budget and no stream waits longer than its
    bound (plus the lateness of one run)."""
    plan = users(n_users) + domains(n_domains)
    delivering: Dict[int, set] = {}
    for run, stream in bursts:
        if plan:
            delivering.setdefault(run, set()).add(plan[stream % len(plan)].key)
    hot_most = len(set().union(*delivering.values()))
    slowest = INTERVAL + max(0, max(jitter))  # a lap fits in the runs left before the bound
    user_runs, domain_runs = 60 // slowest - 1, 600 // slowest - 1
    budget = hot_most + -(-n_users // user_runs) + -(-n_domains // domain_runs) + spare + 1
    policy = Policy(INTERVAL, 120, 60, 600, budget, None, 3600, 6000)
    marks: Dict[str, Marks] = {}
    last: Dict[str, int] = {}
    warm = None
    now, previous = T0, None
    for run in range(100):
        cadence = None if previous is None else now - previous
        chosen = plan_run(plan, marks, now, policy, cadence)
        previous = now
        if warm is None and len(last) == len(plan):
            warm = run + 6  # a lap of the users (60 s at 10 s: 5 runs) after the last first poll
        steady = warm is not None and run > warm
        assert not steady or chosen.needed <= budget, run
        started = chosen.order[:budget]
        for stream in started:
            if steady:
                assert now - last[stream.key] <= policy.revisit_s(stream.object_type) + 2, (run, stream.key)
            last[stream.key] = now
        outcome = Outcome({s.key for s in started}, {k for k in delivering.get(run, ()) if k in last})
        marks = record_run(marks, [s.key for s in plan], outcome, now, policy)
        now += INTERVAL + jitter[run % len(jitter)]
    late = now - INTERVAL - 2
    assert all(late - t <= policy.revisit_s(k.split("/")[0]) + 2 for k, t in last.items())
