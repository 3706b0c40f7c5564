"""End to end into Google SecOps: the simulator's whole organization through the loopback fake of
Google's token endpoint and the Chronicle API, each event imported exactly once across injected
429/5xx, a crash between an accepted import and the state commit, and a second run; a refused event
in quarantine; the delivery property over all of these at once; no secret in anything the forwarder
printed or stored."""

from __future__ import annotations

import contextlib
import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder import app
from forwarder.config import load_settings
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.state import open_store
from tests.e2e.helpers import cli
from tests.e2e.test_es_crash import Crash, CrashingStore
from tests.e2e.test_every_sink import ORG, expected
from tests.fakes import NO_WAITS
from tests.receivers.secops import INSTANCE, PROJECT, REGION, SecOpsFake

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)

BATCH = 40


@pytest.fixture
def sim():
    with Simulator(ORG) as simulator:
        yield simulator


def env_for(sim, fake, tmp_path, **extra):
    domains = ",".join(d.name for d in ORG.domains if d.destroyed_us is None)
    return {
        "FORWARDER_API_URL": sim.base_url,
        "FORWARDER_CLIENT_ID": DEMO_CLIENT_ID,
        "FORWARDER_CLIENT_SECRET": DEMO_CLIENT_SECRET,
        "FORWARDER_STATE": str(tmp_path / "state"),
        "FORWARDER_QUARANTINE": str(tmp_path / "quarantine"),
        "FORWARDER_INITIAL_LOOKBACK": "13mo",
        "FORWARDER_DOMAINS": domains,
        "FORWARDER_BATCH_EVENTS": str(BATCH),
        "FORWARDER_FORMAT": "udm",
        "FORWARDER_SINK": fake.url,
        "FORWARDER_SECOPS_PROJECT": PROJECT,
        "FORWARDER_SECOPS_REGION": REGION,
        "FORWARDER_SECOPS_INSTANCE": INSTANCE,
        "FORWARDER_SECOPS_CREDENTIALS": str(fake.key_file(tmp_path)),
        "FORWARDER_HEALTH_EVENTS": "false",  # the fake holds the audit events alone
        **extra,
    }


def test_the_whole_org_arrives_once_across_faults_and_a_second_run_sends_nothing(sim, tmp_path):
    with SecOpsFake() as fake:
        settings = load_settings(env_for(sim, fake, tmp_path))
        # fewer than FORWARDER_MAX_ATTEMPTS (5) in all: even if every one hits the same request, it
        # goes through in this run
        fake.fail_next(2, status=429, retry_after=1)
        fake.fail_next(2, status=503)
        first = run_once(settings)
        assert first.ok, first.to_dict()
        second = run_once(settings)
        assert second.ok and second.totals()["shipped"] == 0
        ids = fake.ids()
        assert sorted(ids) == expected() and len(ids) == len(set(ids))
        assert fake.oversized == 0 and fake.largest_request <= 1_000_000
        assert all(event["metadata"]["vendor_name"] == "Fortra" for event in fake.events)


def test_a_batch_refused_past_its_attempts_is_sent_again_each_event_once(sim, tmp_path):
    with SecOpsFake() as fake:
        settings = load_settings(env_for(sim, fake, tmp_path, FORWARDER_CONCURRENCY="1"))
        fake.fail_next(5, status=503)  # FORWARDER_MAX_ATTEMPTS: the first request gives up
        run_once(settings)  # the stream may read its records again in this run, or fail it
        second = run_once(settings)
        imports = [seen.status for seen in fake.seen() if seen.path.endswith(":import")]
        assert imports[:6] == [503] * 5 + [200]
        assert second.ok, second.to_dict()
        ids = fake.ids()
        assert sorted(ids) == expected() and len(ids) == len(set(ids))


@pytest.mark.parametrize("crash_on", [1, 3])
def test_a_crash_between_import_and_commit_sends_nothing_twice(sim, tmp_path, crash_on):
    with SecOpsFake() as fake:
        settings = load_settings(env_for(sim, fake, tmp_path, FORWARDER_CONCURRENCY="1"))
        store = CrashingStore(open_store(settings.state), crash_on)
        with pytest.raises(Crash):
            run_once(settings, store=store)
        assert fake.ids()  # something was imported before the crash
        report = run_once(settings)
        assert report.ok, report.to_dict()
        ids = fake.ids()
        assert sorted(ids) == expected() and len(ids) == len(set(ids))


def test_a_refused_event_goes_to_quarantine_and_the_rest_arrive(sim, tmp_path):
    bad = expected()[7]
    with SecOpsFake() as fake:
        fake.poisoned = {bad}
        settings = load_settings(env_for(sim, fake, tmp_path))
        first = run_once(settings)
        again = run_once(settings)
    quarantined = [
        json.loads(line) for line in (tmp_path / "quarantine" / "quarantine.ndjson").read_text().splitlines()
    ]
    assert [entry["event_id"] for entry in quarantined] == [bad]
    assert "HTTP 400 INVALID_ARGUMENT" in quarantined[0]["reason"]
    assert first.ok and first.totals()["quarantined"] == 1
    assert sorted(fake.ids()) == [i for i in expected() if i != bad]
    assert again.ok and again.totals()["shipped"] == 0


def test_run_and_check_print_no_secret(sim, tmp_path):
    with SecOpsFake() as fake:
        env = env_for(sim, fake, tmp_path, FORWARDER_LOG_FORMAT="json", FORWARDER_LOG_LEVEL="DEBUG")
        fake.fail_next(2, status=503)
        checked = cli("check", env=env)
        ran = cli("run", env=env)
        tokens = fake.issued()
    assert checked.returncode == 0, checked.stderr
    assert ran.returncode == 0, ran.stderr
    assert "instance projects/" in checked.stdout + checked.stderr
    key = fake.key_document()
    pem_lines = [line for line in key["private_key"].splitlines() if line and "-----" not in line]
    stored = "".join(
        p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file() and "key" not in p.name
    )
    output = checked.stdout + checked.stderr + ran.stdout + ran.stderr + stored
    assert tokens and not [secret for secret in [*tokens, *pem_lines] if secret in output]


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    poisoned=st.sets(st.integers(0, 1000), max_size=3),
    faults=st.lists(st.sampled_from([429, 500, 503]), max_size=4),
    crash_on=st.none() | st.integers(1, 6),
    batch=st.sampled_from([25, 200]),
)
def test_whatever_is_refused_throttled_or_killed_each_event_arrives_once_or_in_quarantine(
    sim, tmp_path_factory, poisoned, faults, crash_on, batch
):
    """The delivery property against this sink: refused events anywhere (partial acceptance of a
    batch), throttling and server errors, a process killed at a state commit; then runs until one
    is clean: every event imported or quarantined, none imported twice, none both."""
    tmp_path = tmp_path_factory.mktemp("property")
    bad = {expected()[n] for n in poisoned}
    with SecOpsFake() as fake:
        fake.poisoned = bad
        for status in faults:
            fake.fail_next(1, status=status)
        settings = load_settings(env_for(sim, fake, tmp_path, FORWARDER_BATCH_EVENTS=str(batch)))
        if crash_on is not None:
            with contextlib.suppress(Crash):
                run_once(settings, store=CrashingStore(open_store(settings.state), crash_on))
        reports = [run_once(settings) for _ in range(2)]
        ids = fake.ids()
    quarantine = tmp_path / "quarantine" / "quarantine.ndjson"
    lines = quarantine.read_text().splitlines() if quarantine.exists() else []
    quarantined = [json.loads(line)["event_id"] for line in lines]
    assert reports[-1].ok and reports[-1].totals()["shipped"] == 0
    assert len(ids) == len(set(ids)) and not set(ids) & set(quarantined)
    assert sorted(set(ids) | set(quarantined)) == expected()
    assert set(quarantined) == bad
