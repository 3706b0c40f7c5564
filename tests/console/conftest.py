from __future__ import annotations

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator


@pytest.fixture
def sim():
    with Simulator(generate_org(2)) as s:
        yield s
