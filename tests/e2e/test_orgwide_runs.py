"""Runs that use the org-wide index over loopback: where the simulator honours a name-less query a run
asks it which streams hold new records and ships them from its answer (and polls a backstop turn), a
few calls a run; where
it refuses, runs poll stream by stream as before; where it stops honouring it or lies, no record is
lost and runs go back to polling stream by stream. Counted in requests and runs, never in seconds:
back-to-back runs stand for runs a schedule interval apart (each run's wall clock steps on)."""

from __future__ import annotations

import time

import pytest

from forwarder.app import run_once
from forwarder.records import event_id
from forwarder.retry import Pace
from forwarder.scheduling.marks import read_marks
from forwarder.scheduling.scheduler import NAME
from forwarder.sim.endpoints import AUDITS_PATH
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.state.local import LocalStore
from forwarder.timeutil import now_us
from tests.e2e.helpers import settings_for
from tests.fakes import MemorySink


class Steps:
    """Every run's scheduler sees the clock ``step`` seconds further on than the last run's."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.runs = 0

    def pace(self) -> Pace:
        """The next run's pace: its wall clock ``step`` seconds past the last run's."""
        offset = self.step * self.runs
        self.runs += 1
        return Pace(wall_clock=lambda: time.time() + offset)


def _settings(sim, tmp_path, interval):
    domains = ",".join(d.name for d in sim.org.domains[:2])
    return settings_for(
        sim.base_url,
        "stdout",
        str(tmp_path / "state"),
        FORWARDER_DOMAINS=domains,
        FORWARDER_SCHEDULE_INTERVAL=interval,
    )


def _nameless(sim, since=0):
    return sum(1 for r in sim.requests[since:] if r.path == AUDITS_PATH and "name" not in r.query)


def _run(settings, sim, steps):
    """One run (a step on from the last): its report, the requests it made, and the events it shipped."""
    before, sink = len(sim.requests), MemorySink()
    report = run_once(settings, sink=sink, pace=steps.pace())
    assert report.ok, report.error or [s.error for s in report.streams if s.error]
    return report, len(sim.requests) - before, set(sink.delivered)


def _book(tmp_path):
    return read_marks(LocalStore(str(tmp_path / "state")).slot(NAME).read()[0])


def test_an_honoured_index_ships_new_records_from_its_answer_at_the_cost_of_an_idle_run(tmp_path):
    steps = Steps(5)
    with Simulator(generate_org(20), nameless="org-wide") as sim:
        settings = _settings(sim, tmp_path, "5s")
        _run(settings, sim, steps)  # every stream's first read
        assert _book(tmp_path).orgwide == {}  # not probed: it could save nothing in that run
        _run(settings, sim, steps)  # the probe
        assert _book(tmp_path).orgwide["user"].honoured and _book(tmp_path).orgwide["domain"].honoured
        since = len(sim.requests)
        idle, _, _ = _run(settings, sim, steps)
        # One name-less query per object type and a backstop now and then (22 streams within
        # FORWARDER_INDEX_REVISIT, 576 intervals; the token is the process's): where per-stream
        # polling of the same streams takes a fifth of the users every run.
        assert _nameless(sim, since) == 2
        assert len(idle.streams) <= 1
        actor, domain = sim.org.users[3], sim.org.domains[1]
        made = [sim.org.add_action(now_us(), actor), sim.org.add_action(now_us(), sim.org.users[9], domain)]
        since = len(sim.requests)
        report, _, shipped = _run(settings, sim, steps)
        nameless = _nameless(sim, since)
    assert shipped == {event_id(r) for r in made}
    # Shipped from the answers by the org-wide streams (no call), the actors' streams not read: the
    # run polls what an idle one does, a backstop at most.
    polled = [s.stream for s in report.streams]
    assert sorted(polled[:2]) == ["domain/*", "user/*"] and nameless == 2 and len(polled) <= 3
    actors = {f"user/{actor.email.lower()}", f"user/{sim.org.users[9].email.lower()}"}
    assert not actors & set(polled)
    # Their own polls come within the look-back window (1 hour): they will skip the copies. So does
    # the domain's, unless it was this run's backstop.
    holders = actors | ({f"domain/{domain.name}"} - set(polled))
    marks = _book(tmp_path).streams
    assert all(marks[k].polled_s < time.time() + 3600 - 576 * 5 for k in holders)


def test_a_refused_query_costs_one_call_per_object_type_and_runs_poll_stream_by_stream(tmp_path):
    steps = Steps(5)
    with Simulator(generate_org(20)) as sim:  # the default: 400 "name is required"
        settings = _settings(sim, tmp_path, "5s")
        _run(settings, sim, steps)
        _run(settings, sim, steps)
        assert _nameless(sim) == 2
        assert not _book(tmp_path).orgwide["user"].honoured
        since = len(sim.requests)
        _, idle, _ = _run(settings, sim, steps)
        assert _nameless(sim, since) == 0  # the verdict is kept: not asked again for hours
    assert idle > 5  # a turn of the users every run (a fifth of them), and the hot streams


@pytest.mark.parametrize("becomes", ["refuse", "empty", "one-trail"])
def test_an_index_that_stops_honouring_the_query_or_lies_loses_nothing(tmp_path, becomes):
    steps = Steps(60)  # a minute a run: the records below are old enough to be held to the answer
    with Simulator(generate_org(20), nameless="org-wide") as sim:
        settings = settings_for(
            sim.base_url,
            "stdout",
            str(tmp_path / "state"),
            FORWARDER_SCHEDULE_INTERVAL="60s",
            FORWARDER_INDEX_REVISIT="4m",  # the backstop: every stream within 4 runs
        )
        _run(settings, sim, steps)
        _run(settings, sim, steps)
        assert _book(tmp_path).orgwide["user"].honoured
        sim.endpoints.service.nameless = becomes
        # Users the one-trail answer (the first user's) does not hold; made a while ago, so an
        # honest answer of the next run would hold them.
        made = {event_id(sim.org.add_action(now_us() - 90_000_000, u)) for u in sim.org.users[5:8]}
        shipped = set()
        for _ in range(4):  # the bound: 4 runs
            shipped |= _run(settings, sim, steps)[2]
        assert made <= shipped  # nothing lost: the backstop read each stream within its bound
        assert not _book(tmp_path).orgwide["user"].honoured  # refused, or caught lacking records
        since = len(sim.requests)
        _run(settings, sim, steps)
        assert _nameless(sim, since) == 0  # polled stream by stream again
