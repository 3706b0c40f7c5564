"""The scheduler over loopback: a run stops at its call budget and the next goes on with what it
left; quiet streams wait their turn; actors the users endpoint does not list get streams; the users
list is reused for its cache time. Counted in requests and streams, never in seconds."""

from __future__ import annotations

import pytest

from forwarder.app import run_once
from forwarder.sim.endpoints import AUDITS_PATH, USERS_PATH
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import format_us, now_us
from tests.e2e.helpers import settings_for
from tests.fakes import MemorySink


@pytest.fixture
def sim():
    with Simulator(generate_org(20)) as sim:
        yield sim


def test_a_run_stops_at_its_call_budget_and_the_next_goes_on_where_it_stopped(sim, tmp_path):
    settings = settings_for(sim.base_url, "stdout", str(tmp_path / "state"), FORWARDER_RUN_BUDGET_CALLS="8")
    first = run_once(settings, sink=MemorySink())
    assert first.ok and first.not_started
    assert first.stop_reason and "FORWARDER_RUN_BUDGET_CALLS" in first.stop_reason
    second = run_once(settings, sink=MemorySink())
    started = [s.stream for s in second.streams]
    hot = {s.stream for s in first.streams if s.new}
    assert len([k for k in started if k in hot]) <= 4  # half the budget to streams that delivered
    # then the ones left, in order: as many as the calls the hot streams' passes left (streams run
    # four at once, so a page more or less there is one stream less or more here)
    left = [k for k in started if k not in hot]
    assert left and left == first.not_started[: len(left)]
    polled = {s.stream for s in first.streams} | set(started)
    while len(polled) < len(sim.org.users):  # every stream gets its first read, a few calls a run
        more = run_once(settings, sink=MemorySink())
        assert more.streams, "a run polled nothing though streams were never read"
        polled |= {s.stream for s in more.streams}


def test_quiet_streams_wait_their_turn(sim, tmp_path):
    # A 10 s schedule: user streams within 60 s (a lap in 5 runs); no stream counts as hot.
    settings = settings_for(
        sim.base_url,
        "stdout",
        str(tmp_path / "state"),
        FORWARDER_SCHEDULE_INTERVAL="10s",
        FORWARDER_HOT_WINDOW="0s",
    )
    run_once(settings, sink=MemorySink())  # every stream's first read
    calls = sim.calls()
    later = run_once(settings, sink=MemorySink())
    # Back to back, nothing is due but one turn: a fifth of the 25 users.
    assert len(sim.org.users) == 25
    assert len(later.streams) == 5 and len(later.not_due) == 20
    probes = sum(1 for r in sim.requests if r.path == AUDITS_PATH and "name" not in r.query)
    assert probes == 1  # the org-wide probe, refused: once, in the second run
    assert sim.calls() - calls == 5 + probes  # an idle polled stream costs one call


def test_an_actor_the_users_endpoint_does_not_list_gets_a_stream(sim, tmp_path):
    domain = sim.org.domains[0].name
    ghost = "support.agent@vendor.example"
    sim.add_record(
        {
            "action": "Updated DMARC record",
            "filterable_action": "domain.update",
            "user": ghost,
            "object": domain,
            "changes": {},
            "created_at": format_us(now_us() - 60_000_000),
        }
    )
    settings = settings_for(sim.base_url, "stdout", str(tmp_path / "state"), FORWARDER_DOMAINS=domain)
    first = run_once(settings, sink=MemorySink())
    assert first.ok and f"user/{ghost}" not in {s.stream for s in first.streams}
    second = run_once(settings, sink=MemorySink())
    ghost_stream = next(s for s in second.streams if s.stream == f"user/{ghost}")
    assert ghost_stream.ok and ghost_stream.fetched >= 1


def test_the_users_list_is_reused_for_its_cache_time(sim, tmp_path):
    cached = settings_for(sim.base_url, "stdout", str(tmp_path / "a"))
    run_once(cached, sink=MemorySink())
    listed = sim.calls(USERS_PATH)
    run_once(cached, sink=MemorySink())
    assert sim.calls(USERS_PATH) == listed and listed > 0
    every_run = settings_for(sim.base_url, "stdout", str(tmp_path / "b"), FORWARDER_USERS_CACHE="0s")
    run_once(every_run, sink=MemorySink())
    before = sim.calls(USERS_PATH)
    run_once(every_run, sink=MemorySink())
    assert sim.calls(USERS_PATH) > before
