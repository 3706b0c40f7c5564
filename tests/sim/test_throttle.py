"""The simulator's server-side rate limit: a token bucket of ``rate`` per second whose refusals are
429s with Retry-After, each request counted whatever its endpoint."""

from __future__ import annotations

import pytest

from forwarder.sim.endpoints import AUDITS_PATH
from forwarder.sim.throttle import ServerBucket
from tests.sim.helpers import FakeClock, audits, token


def test_a_bucket_admits_a_burst_of_rate_then_one_per_refill():
    clock = FakeClock(100.0)
    bucket = ServerBucket(4, clock=clock)
    assert [bucket.admit() for _ in range(5)] == [None, None, None, None, 1]
    clock.seconds += 0.25  # one token back
    assert bucket.admit() is None and bucket.admit() == 1
    clock.seconds += 10  # refilled to the burst, never above it
    assert [bucket.admit() is None for _ in range(5)] == [True] * 4 + [False]
    assert bucket.refused == 3


def test_retry_after_is_whole_seconds_until_a_token():
    clock = FakeClock(0.0)
    bucket = ServerBucket(0.25, clock=clock)  # a token every 4 s, burst 1
    assert bucket.admit() is None
    assert bucket.admit() == 4
    clock.seconds += 3.5
    assert bucket.admit() == 1


def test_a_bucket_needs_a_positive_rate():
    with pytest.raises(ValueError):
        ServerBucket(0)


def test_the_simulator_answers_429_past_its_rate_and_counts_it(make_sim):
    sim = make_sim(max_rps=0.01)  # one request, then a token every 100 s
    bearer = "never-checked"  # the limit answers before authentication
    assert token(sim).status_code == 200  # the token endpoint counts too
    refused = audits(sim, bearer, object_type="user", name="a@b")
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "100"
    assert refused.json()["code"] == 429
    assert sim.throttled == 1 and sim.calls(AUDITS_PATH) == 1
    assert make_sim().throttled == 0
