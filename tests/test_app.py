"""One run wired by forwarder.app against the simulator: what a failing platform costs a run."""

from __future__ import annotations

import functools

from forwarder import app
from forwarder.config import load_settings
from forwarder.retry import Pace
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from tests.e2e.helpers import HEC_TOKEN, env_for, settings_for
from tests.fakes import NO_WAITS, Waits
from tests.receivers.hec import HecReceiver
from tests.receivers.silent import Silent
from tests.receivers.users_api import UsersApi

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)

ORG = generate_org(5)
USERS = ",".join(f"user{i}@example.com" for i in range(20))


def twenty_streams(api_url, tmp_path, **extra):
    sink = (tmp_path / "events.ndjson").as_uri()
    env = dict(FORWARDER_USERS=USERS, FORWARDER_OBJECT_TYPES="user", FORWARDER_MAX_ATTEMPTS="2", **extra)
    return settings_for(api_url, sink, str(tmp_path / "state"), **env)


def test_a_failing_token_endpoint_fails_the_run_once_after_one_token_request(tmp_path):
    """Before: each of the 20 streams asked again (40 token requests) and failed on its own."""
    with Simulator(ORG) as sim:
        sim.fail_next(1000, status=503, path_prefix=sim.token_path)
        report = run_once(twenty_streams(sim.base_url, tmp_path))
        token_requests = sim.calls(sim.token_path)
        assert token_requests == 2  # one request, FORWARDER_MAX_ATTEMPTS tries
        assert sim.calls() == 0
    assert not report.ok
    assert "HTTP 503" in report.error and "FORWARDER_TOKEN_PATH" in report.error
    assert not [s for s in report.streams if s.error]  # one error for the run, not one per stream


def test_a_token_endpoint_that_never_answers_is_waited_for_once(tmp_path):
    with Silent() as silent:
        report = run_once(twenty_streams(silent.url, tmp_path, FORWARDER_HTTP_TIMEOUT="1"))
    assert len(silent.accepted) == 2  # before: 40, one request per stream, each tried twice
    assert "no complete response within 1 s" in report.error and "FORWARDER_API_URL" in report.error
    assert not report.streams


def test_a_users_listing_over_the_cap_fails_the_run_before_any_stream(tmp_path):
    with UsersApi("endless") as api:
        env = env_for(api.url, (tmp_path / "events.ndjson").as_uri(), str(tmp_path / "state"))
        env.update(
            FORWARDER_OBJECT_TYPES="user",
            FORWARDER_MAX_USERS="100",
            FORWARDER_PAGE_LIMIT="50",
            FORWARDER_MAX_PAGES="4",
        )
        report = run_once(load_settings(env))
        assert "FORWARDER_MAX_USERS" in report.error and not report.streams
        assert api.requests["/v1/cp/audits"] == 0  # before: 200 streams, each asking
        assert api.requests["/v1/ep/users"] == 3


def test_every_wait_of_a_run_is_in_the_pace_it_was_handed(tmp_path):
    """The API client's retries and the sink's wait in the run's pace: nothing is patched and nothing
    sleeps."""
    waits = Waits()
    with Simulator(ORG) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        sim.fail_next(1, status=503, retry_after=3)
        hec.fail_next(1, status=503, retry_after=7)
        report = app.run_once(settings_for(sim.base_url, hec.url, str(tmp_path / "state")), pace=Pace(waits))
        assert report.ok, report.to_dict()
        assert hec.events()  # the batch refused once went again
    assert sorted(waits) == [3.0, 7.0]  # as the API and the sink asked, recorded instead of slept
