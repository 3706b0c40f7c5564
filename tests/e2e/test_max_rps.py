"""FORWARDER_MAX_RPS holds a whole run's API requests to the token bucket's rate, every stream
thread together: judged by when the simulator saw each request arrive, not by how long the run took.

A token bucket of rate ``r`` and burst ``b`` lets at most ``b + r*T`` requests start in any span of
``T`` seconds. A request arrives a little after it starts, by a delay that varies, so arrivals may
bunch up by that delay; the check allows up to ``DELAY_S`` of it, and no more."""

from __future__ import annotations

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from tests.e2e.helpers import HEC_TOKEN, cli, env_for, quiet_users
from tests.receivers.hec import HecReceiver

RATE = 2.0  # requests per second; the bucket's burst is max(1, rate)
BURST = 2
DELAY_S = 2.0  # how much later than its start a request may reach the simulator, on a busy machine


def busiest_span(arrivals, rate):
    """(requests, first, last) of the span of consecutive arrivals that most exceeds ``rate``."""
    times = sorted(arrivals)
    spans = ((j - i + 1, i, j) for i in range(len(times)) for j in range(i, len(times)))
    return max(spans, key=lambda s: s[0] - rate * (times[s[2]] - times[s[1]]))


def test_max_rps_holds_every_api_request_of_a_run_to_the_bucket(tmp_path):
    org = generate_org(3)
    users = quiet_users(org, 4)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        env = env_for(
            sim.base_url,
            hec.url,
            str(tmp_path / "state"),
            FORWARDER_OBJECT_TYPES="user",
            FORWARDER_USERS=",".join(users),
            FORWARDER_PAGE_LIMIT="20",
            FORWARDER_CONCURRENCY="4",
            FORWARDER_MAX_RPS=f"{RATE:g}",
        )
        done = cli("run", env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        arrivals = list(sim.arrivals)
        assert hec.events(), "the run shipped nothing: the test would prove nothing"
    assert len(arrivals) >= 4 * BURST, f"only {len(arrivals)} API requests: too few to judge a rate"
    count, i, j = busiest_span(arrivals, RATE)
    span = sorted(arrivals)[j] - sorted(arrivals)[i]
    allowed = BURST + RATE * (span + DELAY_S)
    assert count <= allowed, (
        f"{count} API requests arrived within {span:.2f} s (requests {i + 1} to {j + 1} of "
        f"{len(arrivals)}); FORWARDER_MAX_RPS={RATE:g} allows at most {allowed:.1f}"
    )
