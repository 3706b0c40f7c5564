"""The API client against a simulator that breaks connections mid-body, trickles, or echoes secrets."""

from __future__ import annotations

import threading
import time

import pytest

from forwarder import retry, stop
from forwarder.api.client import ApiClient, Credentials
from forwarder.errors import ApiError
from forwarder.reading.trail import TrailReader
from forwarder.sim.endpoints import AUDITS_PATH, USERS_PATH
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.streams import Stream
from tests.fakes import Waits
from tests.reading.helpers import read_through

ORG = generate_org(4)
USER = ORG.users[0].email


@pytest.fixture(autouse=True)
def waits():
    yield Waits()
    stop.reset()


def client_for(sim, attempts=5, waits=None, **kw):
    """A client of ``sim`` whose waits between tries are recorded in ``waits``, never slept."""
    policy = retry.RetryPolicy(attempts=attempts, sleep=Waits() if waits is None else waits)
    return ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET), retry=policy, **kw)


def audits(client):
    return read_through(TrailReader(client, 200, 10).pages(Stream("user", USER, None), None))[0]


@pytest.mark.parametrize("path", ["/v1/ep/token", USERS_PATH, AUDITS_PATH])
def test_a_connection_closed_mid_body_is_retried_on_every_endpoint(path, waits):
    with Simulator(ORG) as sim:
        sim.break_next(1, "cut", path_prefix=path)
        client = client_for(sim, waits=waits)
        assert client.users(200, 10, 1000) and audits(client) == sim.records_for("user", USER)
        assert len(waits) == 1  # one retry, then the whole answer


def test_a_mid_body_close_that_never_heals_is_an_api_error_not_a_traceback():
    with Simulator(ORG) as sim:
        sim.break_next(10, "cut", path_prefix=USERS_PATH)
        with pytest.raises(ApiError, match=r"ChunkedEncodingError|ConnectionError|IncompleteRead"):
            client_for(sim, attempts=3).users(200, 10, 1000)


def test_a_trickling_body_is_cut_at_the_total_deadline():
    with Simulator(ORG) as sim:
        sim.trickle_seconds = 0.2  # every read returns well inside the 1 s timeout
        sim.break_next(5, "trickle")
        client = client_for(sim, timeout=1, attempts=2)
        with pytest.raises(ApiError, match="no complete response within 1 s"):
            audits(client)


def trickled_pull(sim, shield=stop.ORDINARY):
    """A thread reading the audits of a trickled answer at ``shield`` level, with a timeout only a
    stop can beat, once its request has arrived; and what ended it ("stopped")."""
    sim.trickle_seconds = 0.3
    sim.break_next(1, "trickle")
    client = client_for(sim, timeout=900)
    outcome = {}

    def pull():
        with stop.shielded(shield):
            try:
                audits(client)
            except stop.Stopped as exc:
                outcome["stopped"] = exc

    worker = threading.Thread(target=pull, daemon=True)
    worker.start()
    while not any(r.path == AUDITS_PATH for r in sim.requests):
        worker.join(0.05)
    return worker, outcome


def test_a_stop_request_cuts_a_request_in_flight():
    with Simulator(ORG) as sim:
        worker, outcome = trickled_pull(sim)
        stop.request()
        worker.join(60)
        assert not worker.is_alive() and "stopped" in outcome


def test_a_stop_leaves_a_finishing_request_to_its_deadline_and_an_urgent_one_cuts_it():
    with Simulator(ORG) as sim:
        worker, outcome = trickled_pull(sim, stop.FINISHING)  # a state write of an accepted batch
        stop.request()
        worker.join(1.0)  # four looks of the watchdog at the stop (one every quarter second)
        assert worker.is_alive() and "stopped" not in outcome
        stop._urgent.set()  # what a second stop signal sets
        worker.join(60)
        assert not worker.is_alive() and "stopped" in outcome


def test_trickled_headers_are_cut_at_the_total_deadline_too():
    with Simulator(ORG) as sim:
        sim.trickle_seconds = 0.2
        sim.break_next(5, "trickle-headers")  # ~50 header bytes: 10 s at this pace
        client = client_for(sim, timeout=1, attempts=2)
        with pytest.raises(ApiError, match="no complete response within 1 s"):
            audits(client)
        while len(sim.trickled) < 2:  # the server notices the hang-up at its next byte
            time.sleep(0.05)
        assert all(sent < 40 for sent, _ in sim.trickled)  # cut inside the headers, not after them


def test_calls_in_flight_share_one_watchdog_and_each_ends_at_its_own_deadline():
    """A watchdog thread per call cost two thread hand-offs per request: one watches them all."""
    with Simulator(ORG) as sim:
        sim.trickle_seconds = 0.2
        sim.break_next(2, "trickle", path_prefix=AUDITS_PATH)
        errors = {}

        def pull(timeout):
            client = client_for(sim, timeout=timeout, attempts=1)
            try:
                audits(client)
            except ApiError as exc:
                errors[timeout] = str(exc)

        workers = [threading.Thread(target=pull, args=(t,), daemon=True) for t in (1, 2)]
        for worker in workers:
            worker.start()
        while sum(r.path == AUDITS_PATH for r in sim.requests) < 2:
            time.sleep(0.02)
        assert [t.name for t in threading.enumerate()].count("http-deadline") == 1
        for worker in workers:
            worker.join(60)
        assert "no complete response within 1 s" in errors[1]
        assert "no complete response within 2 s" in errors[2]
