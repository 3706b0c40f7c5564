"""Each tenant's FORWARDER_MAX_RPS (``max_rps``, the environment's by default) holds that tenant's
API requests to its own token bucket: counted at the simulator, per tenant, in a window of virtual
time. The buckets' clock stands still except when a bucket waits: the wait moves it on, as if
waited, and a wait past the window's end refuses the request. So a bucket of rate ``r`` and burst
``b`` (= max(1, r)) lets exactly ``floor(b + r * WINDOW_S)`` requests through, and nothing sleeps."""

from __future__ import annotations

import contextlib
import functools
import math

import pytest

from forwarder import app, retry
from forwarder.api.ratelimit import RateLimiter
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.streams import Stream
from forwarder.tenants import parse_tenants

WINDOW_S = 10.1  # off every rate's step, so no request starts exactly at the window's end
ENVIRONMENT_RPS = 1.0  # FORWARDER_MAX_RPS: the rate of a tenant that sets none
RATES = {"acme": 0.5, "globex": None, "initech": 4.0, "umbrella": 2.0}  # max_rps per tenant
CAP = 200  # requests a tenant may try: an unlimited client would stop here, not loop forever


class WindowOver(Exception):
    """A bucket would start the request after the window's end."""


class VirtualTime:
    """The clock of every bucket, and the wait they call (retry.sleep)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.end = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if self.now + seconds > self.end:
            raise WindowOver()
        self.now += seconds


def allowed(rate: float) -> int:
    return math.floor(max(1.0, rate) + rate * WINDOW_S)


def test_each_tenant_is_held_to_its_own_max_rps_in_its_own_bucket(monkeypatch):
    virtual = VirtualTime()
    monkeypatch.setattr(app, "RateLimiter", functools.partial(RateLimiter, clock=virtual.clock))
    monkeypatch.setattr(retry, "sleep", virtual.sleep)
    org = generate_org(3)
    user = org.users[0].email
    with contextlib.ExitStack() as servers:
        sims = {name: servers.enter_context(Simulator(org)) for name in RATES}
        base = {
            "FORWARDER_API_URL": "https://unused.example",
            "FORWARDER_STATE": "./state",
            "FORWARDER_SINK": "stdout://",
            "FORWARDER_MAX_RPS": f"{ENVIRONMENT_RPS:g}",
        }
        doc = {
            "tenants": [
                {
                    "name": name,
                    "api_url": sims[name].base_url,
                    "client_id": DEMO_CLIENT_ID,
                    "client_secret": DEMO_CLIENT_SECRET,
                    **({} if rate is None else {"max_rps": rate}),
                }
                for name, rate in RATES.items()
            ]
        }
        tenants = parse_tenants(doc, base)
        clients = [app.build_client(t.settings) for t in tenants]  # built at once, as tenants' runs are
        for client in clients:  # each tenant in a window of its own, one after another
            virtual.end = virtual.now + WINDOW_S
            with pytest.raises(WindowOver):
                for _ in range(CAP):  # the token request first, then audits pages
                    client.audits(Stream("user", user), {}, 5, 0)
            client.close()
        seen = {name: len(sim.requests) for name, sim in sims.items()}

    expected = {name: allowed(ENVIRONMENT_RPS if rate is None else rate) for name, rate in RATES.items()}
    assert expected == {"acme": 6, "globex": 11, "initech": 44, "umbrella": 22}
    assert seen == expected
