"""A seeded organization at a fixed time, a clock tests move, and simulators started on free ports."""

from __future__ import annotations

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from tests.sim.helpers import NOW_US, FakeClock


@pytest.fixture(scope="module")
def org():
    """Shared by tests that only read; tests that add activity generate their own."""
    return generate_org(7, NOW_US)


@pytest.fixture
def clock():
    return FakeClock(NOW_US / 1_000_000)


@pytest.fixture
def make_sim(org, clock):
    started = []

    def make(**knobs):
        knobs.setdefault("clock", clock)
        sim = Simulator(knobs.pop("org", org), **knobs)
        sim.start()
        started.append(sim)
        return sim

    yield make
    for sim in started:
        sim.stop()
