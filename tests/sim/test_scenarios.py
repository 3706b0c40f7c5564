"""The detection scenarios: all in the past, inside the first run's look-back, labelled consistently."""

from __future__ import annotations

from forwarder.sim.scenarios import BURSTS, burst_actors, seeded_org
from forwarder.timeutil import format_us

NOW_US = 1_790_000_000_000_000
DAY_US = 86_400_000_000


def test_every_scenario_happened_within_the_first_runs_look_back():
    _, seeded = seeded_org(31, NOW_US)
    times = sorted(s.record["created_at"] for s in seeded)
    assert format_us(NOW_US - 14 * DAY_US) < times[0] and times[-1] < format_us(NOW_US)


def test_each_burst_names_actors_of_the_organization():
    org, _ = seeded_org(31, NOW_US)
    emails = {user.email for user in org.users}
    for burst in BURSTS:
        assert burst_actors(org, burst) and set(burst_actors(org, burst)) <= emails
