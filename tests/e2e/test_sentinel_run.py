"""Whole runs of the forwarder into Microsoft Sentinel's Logs Ingestion API (the loopback fake of
tests/receivers/sentinel.py), from the simulator: every record arrives as one row, exactly once,
through refusals (429 with Retry-After, 503) and a crash between a batch's acceptance and its state
commit; a second run sends nothing; no request is over the service's limit; no secret in any output.
Log Analytics does not de-duplicate, so "once" is counted row by row here, not by id."""

from __future__ import annotations

import functools
import io
import json
import logging
from collections import Counter

import pytest

from forwarder import app
from forwarder import check as checking
from forwarder.sinks.sentinel import MAX_REQUEST_BYTES
from forwarder.state import open_store
from tests.e2e import test_every_sink as every
from tests.e2e.helpers import settings_for
from tests.e2e.test_es_crash import Crash, CrashingStore
from tests.fakes import NO_WAITS
from tests.receivers.sentinel import CLIENT_SECRET, SentinelReceiver

# The organization, its simulator and what it must deliver are test_every_sink's; retries do not wait
# (the waits between tries are handed in, not slept).
sim, expected = every.sim, every.expected
run_once = functools.partial(app.run_once, pace=NO_WAITS)
check = functools.partial(checking.check, pace=NO_WAITS)


def settings(sim, fake, state):
    return settings_for(
        sim.base_url, fake.sink_uri, str(state), FORWARDER_DOMAINS=every.domains(), **fake.env()
    )


def row_ids(fake):
    return [row["EventId"] for row in fake.rows()]


def assert_within_limits(fake):
    assert max(fake.wire_sizes) <= MAX_REQUEST_BYTES and max(fake.uploads) <= MAX_REQUEST_BYTES


def test_the_whole_org_arrives_once_through_429s_and_503s_and_a_second_run_sends_nothing(
    sim, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG)
    with SentinelReceiver() as fake:
        fake.fail_next(2, status=429, retry_after=3)  # the token request too is retried
        fake.flaky_every = 3
        config = settings(sim, fake, tmp_path / "state")
        first = run_once(config)
        assert first.ok, first.to_dict()
        second = run_once(config)

        ids = row_ids(fake)
        assert sorted(ids) == expected() and len(ids) == len(set(ids))  # every record, each once
        assert second.ok and second.totals()["shipped"] == 0 and len(fake.rows()) == len(ids)
        assert all(row["Ecs"]["event"]["id"] == row["EventId"] for row in fake.rows())
        statuses = Counter(s.status for s in fake.seen() if s.path.startswith("/dataCollectionRules/"))
        assert statuses[429] > 0 and statuses[503] > 0
        tokens = [s.status for s in fake.seen() if s.path.endswith("/oauth2/v2.0/token")]
        assert tokens == [429, 429, 200]  # one token for both runs, once Entra ID took the request
        assert_within_limits(fake)

        out = io.StringIO()
        assert check(config, out)
        assert "ok   sink: Microsoft Sentinel at 127.0.0.1" in out.getvalue()
        shown = out.getvalue() + caplog.text + json.dumps(first.to_dict()) + json.dumps(second.to_dict())
        for secret in (CLIENT_SECRET, *fake.issued()):
            assert secret not in shown


@pytest.mark.parametrize("crash_on", [1, 4])
def test_a_crash_between_acceptance_and_commit_sends_no_row_twice(sim, tmp_path, crash_on):
    with SentinelReceiver() as fake:
        fake.flaky_every = 5
        config = settings(sim, fake, tmp_path / "state")
        store = CrashingStore(open_store(config.state), crash_on)
        with pytest.raises(Crash):
            run_once(config, store=store)
        before = len(fake.rows())

        report = run_once(config)

        ids = row_ids(fake)
        assert report.ok, report.to_dict()
        assert before > 0 and sorted(ids) == expected()
        assert [i for i, n in Counter(ids).items() if n > 1] == []
        assert run_once(config).totals()["shipped"] == 0 and len(fake.rows()) == len(ids)
        assert_within_limits(fake)
