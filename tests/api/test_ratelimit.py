"""Client-side rate limits: a token bucket shared by threads, concurrency that halves on a 429."""

from __future__ import annotations

import threading
from typing import List

import pytest

from forwarder import retry
from forwarder.api.client import ApiClient, Credentials
from forwarder.api.ratelimit import AdaptiveGate, RateLimiter, TokenBucket
from forwarder.sim.endpoints import USERS_PATH
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from tests.fakes import Waits


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: List[float] = []
        self.lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.slept.append(seconds)
            self.now += seconds


def test_bucket_spaces_requests_at_the_rate_after_the_burst():
    clock = FakeClock()
    bucket = TokenBucket(2.0, burst=1, clock=clock, sleep=clock.sleep)
    for _ in range(5):
        bucket.take()
    assert clock.slept == pytest.approx([0.5, 0.5, 0.5, 0.5])  # 5 requests in 2 s at 2/s
    clock.now += 10  # idle time refills at most one burst
    bucket.take()
    bucket.take()
    assert clock.slept[-1] == pytest.approx(0.5)


def test_bucket_shared_by_threads_reserves_in_turn():
    waits: List[float] = []
    lock = threading.Lock()
    frozen = 0.0

    def record(seconds: float) -> None:
        with lock:
            waits.append(seconds)

    bucket = TokenBucket(10.0, burst=1, clock=lambda: frozen, sleep=record)
    threads = [threading.Thread(target=bucket.take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Nobody waited the same slot: the 7 waiters hold 0.1 s, 0.2 s, ... 0.7 s.
    assert sorted(waits) == pytest.approx([0.1 * i for i in range(1, 8)])


def test_gate_halves_on_429_and_grows_back_one_slot_per_round():
    clock = FakeClock()
    gate = AdaptiveGate(8, clock=clock, sleep=clock.sleep)
    gate.throttled(2.0)
    assert gate.limit == 4
    gate.throttled(0.0)
    gate.throttled(0.0)
    gate.throttled(0.0)
    assert gate.limit == 1  # never below one
    gate.enter()  # waits out the Retry-After of the first 429
    assert clock.slept == pytest.approx([2.0])
    gate.leave()
    assert 1 < gate.limit < 2.1
    for _ in range(100):
        gate.enter()
        gate.leave()
    assert gate.limit == 8  # back to the maximum, no further


def test_gate_never_lets_more_than_its_limit_in_flight():
    gate = AdaptiveGate(3)
    gate.throttled(0.0)  # limit 1.5: one at a time until it grows back
    peak, lock, barrier = [0], threading.Lock(), threading.Barrier(6)

    def worker() -> None:
        barrier.wait()
        for _ in range(20):
            gate.enter()
            with lock:
                peak[0] = max(peak[0], gate.in_flight)
            gate.leave()

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 1 <= peak[0] <= 3 and gate.in_flight == 0


def test_a_429_over_http_slows_every_stream_and_max_rps_paces_requests():
    waits = Waits()  # every wait of the limiter and the retries, recorded, never slept
    with Simulator(generate_org(3)) as sim:
        # A clock that stands still: the pacing is the bucket's arithmetic, whatever the requests take.
        limiter = RateLimiter(max_rps=4.0, concurrency=4, clock=lambda: 100.0, sleep=waits)
        credentials = Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        client = ApiClient(sim.base_url, credentials, retry=retry.RetryPolicy(sleep=waits), limiter=limiter)
        sim.fail_next(1, status=429, retry_after=0.5, path_prefix=USERS_PATH)
        assert client.users(200, 10, 1000)
        assert limiter.gate.limit < 4  # halved, then grown a little by the answered requests
        assert any(w == pytest.approx(0.5, abs=0.05) for w in waits)  # Retry-After, paused for all
        for _ in range(6):
            client.users(200, 10, 1000)
        # 9 requests (token, 429, retry, 6 more) at 4/s with a burst of 4: the bucket held back the
        # rest, each a quarter second after the one before (the recorded sleep does not wait).
        paced = sorted(w for w in waits if w != pytest.approx(0.5, abs=0.05))
        assert len(paced) >= 4 and paced[-1] >= 1.0


def test_bucket_started_from_the_last_runs_level_waits_for_it():
    clock = FakeClock()
    bucket = TokenBucket(2.0, burst=4, clock=clock, sleep=clock.sleep)
    bucket.start_from(-1.0)  # the last run promised one request more than its bucket held
    bucket.take()
    assert clock.now == 101.0  # two tokens' worth of waiting, not a full burst at once
    assert bucket.level() == 0.0
    bucket.start_from(100.0)
    assert bucket.level() == 4.0  # never more than a burst


def test_the_pause_a_429_asks_for_is_timed_on_the_limiter_s_own_clock():
    clock = FakeClock()
    limiter = RateLimiter(concurrency=2, clock=clock, sleep=clock.sleep)
    limiter.throttled(5.0)
    with limiter.request():
        pass
    assert clock.slept == [5.0]  # on the clock handed in, not the process's
    with limiter.request():
        pass
    assert clock.slept == [5.0]  # over on that clock: no second pause
