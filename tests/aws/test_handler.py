"""The Lambda handler end to end: moto (DynamoDB/S3, Secrets Manager) over loopback HTTP, the platform
simulator, and the test HEC receiver. The deadline is a fake Lambda context whose clock moves only
when asked, so no test waits for real time."""

from __future__ import annotations

import functools
import json
import logging
import threading

import boto3
import pytest

from forwarder import credentials, stop
from forwarder.config import VARIABLES
from forwarder.errors import ConfigError
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.timeutil import now_us, parse_iso
from handlers import aws_lambda
from handlers.lambda_runtime import RunFailed
from tests.aws.conftest import make_bucket, make_table
from tests.e2e.helpers import HEC_TOKEN, expected_ids
from tests.fakes import NO_WAITS
from tests.receivers import hec as hec_receiver

# The waits between tries are handed in and not slept: a retry tries again at once.
handler = functools.partial(aws_lambda.handler, pace=NO_WAITS)

LOOKBACK_US = 13 * 31 * 86400 * 1_000_000
SCHEDULED = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "time": "2026-01-01T00:00:00Z",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/forwarder-schedule"],
    "detail": {},
}


class FakeContext:
    """A Lambda context whose remaining time drops by ``cost_ms`` each time it is asked: the
    handler's deadline checks drive the clock, nothing sleeps."""

    function_name = "forwarder-test"

    def __init__(self, budget_ms: int = 900_000, cost_ms: int = 0) -> None:
        self.remaining_ms = budget_ms
        self.cost_ms = cost_ms
        self.asked = 0

    def get_remaining_time_in_millis(self) -> int:
        self.asked += 1
        self.remaining_ms -= self.cost_ms
        return self.remaining_ms


@pytest.fixture(autouse=True)
def clean_process(monkeypatch):
    """No cached secret and no log handler carried from test to test."""
    # The HEC receiver writes headers and body separately; without TCP_NODELAY each response
    # waits out the client's delayed ACK (40 ms), which would make 5,000 streams take minutes.
    monkeypatch.setattr(hec_receiver._Handler, "disable_nagle_algorithm", True, raising=False)
    credentials.forget()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    monkeypatch.setattr(logging.getLogger("werkzeug"), "level", logging.WARNING)  # moto's request lines
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    credentials.forget()


@pytest.fixture
def org():
    return generate_org(11)


@pytest.fixture
def sim(org):
    with Simulator(org) as simulator:
        yield simulator


@pytest.fixture
def lambda_env(aws, monkeypatch, tmp_path, sim, hec):
    """The environment template.yaml gives the function, pointing at the local stand-ins."""
    for variable in VARIABLES:
        monkeypatch.delenv(variable.name, raising=False)
    secrets = boto3.client("secretsmanager")
    api = secrets.create_secret(
        Name="forwarder/api",
        SecretString=json.dumps({"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}),
    )
    token = secrets.create_secret(Name="forwarder/hec", SecretString=HEC_TOKEN)
    env = {
        "FORWARDER_API_URL": sim.base_url,
        "FORWARDER_CREDENTIALS": f"secretsmanager:{api['ARN']}",
        "FORWARDER_SINK": hec.url,
        "FORWARDER_SINK_TOKEN_SECRET": f"secretsmanager:{token['ARN']}",
        "FORWARDER_STATE": f"dynamodb://{make_table()}",
        "FORWARDER_QUARANTINE": str(tmp_path / "quarantine"),
        "FORWARDER_INITIAL_LOOKBACK": "13mo",
        "FORWARDER_DEADLINE_MARGIN": "5s",
        "FORWARDER_LEASE_TTL": "300",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def delivered_ids(hec):
    return [e["event"]["event"]["id"] for e in hec.events()]


def reachable(records):
    floor = now_us() - LOOKBACK_US
    return [r for r in records if parse_iso(r["created_at"]) >= floor]


def metric_lines(capsys):
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return [line for line in lines if "_aws" in line]


def assert_each_once(hec, records):
    ids = delivered_ids(hec)
    assert len(ids) == len(set(ids)), "an event was delivered twice"
    assert sorted(ids) == expected_ids(reachable(records))


# -- runs ------------------------------------------------------------------------------------------


def test_full_pull_then_incremental_pull(lambda_env, org, hec, capsys):
    event = SCHEDULED
    first = handler(event, FakeContext())
    assert first["ok"] and not first["skipped"]
    assert_each_once(hec, org.all_records())
    assert first["totals"]["shipped"] == len(delivered_ids(hec))
    [emf] = metric_lines(capsys)
    directive = emf["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "EmailAuthForwarder"
    assert directive["Dimensions"] == [["FunctionName"]]
    assert emf["FunctionName"] == "forwarder-test"
    assert emf["ShippedEvents"] == first["totals"]["shipped"]
    assert emf["FailedStreams"] == 0 and emf["StreamsLeft"] == 0
    assert {m["Name"] for m in directive["Metrics"]} >= {"ShippedEvents", "NewestRecordAgeSeconds"}

    quiet = handler(event, FakeContext())
    assert quiet["ok"] and quiet["totals"]["shipped"] == 0

    added = org.add_activity(40, now_us())
    added.append(org.add_late_record(now_us() - 10 * 60 * 1_000_000))
    third = handler(event, FakeContext())
    assert third["ok"] and third["totals"]["shipped"] == len(added)
    assert_each_once(hec, org.all_records())


@pytest.mark.parametrize("event", [{}, None, {"detail-type": "Scheduled Event"}])
def test_a_console_test_event_runs_the_same(lambda_env, org, hec, monkeypatch, event):
    user = org.users[0].email
    monkeypatch.setenv("FORWARDER_USERS", user)
    result = handler(event, FakeContext())
    assert result["ok"] and [s["stream"] for s in result["streams"]] == [f"user/{user.lower()}"]
    assert_each_once(hec, org.records_for("user", user, now_us()))


def test_s3_state_works_the_same(lambda_env, org, hec, monkeypatch):
    monkeypatch.setenv("FORWARDER_STATE", f"s3://{make_bucket()}/forwarder")
    assert handler(SCHEDULED, FakeContext())["ok"]
    assert handler(SCHEDULED, FakeContext())["totals"]["shipped"] == 0
    assert_each_once(hec, org.all_records())


def test_deadline_stops_starting_streams_and_the_next_run_starts_with_them(
    lambda_env, org, sim, hec, monkeypatch, capsys
):
    monkeypatch.setenv("FORWARDER_CONCURRENCY", "1")
    # 5 s margin, 1 s per deadline check: the run starts 8 streams, then has to stop.
    short = FakeContext(budget_ms=13_000, cost_ms=1_000)
    first = handler(SCHEDULED, short)
    assert first["ok"], "a deadline stop is not a failure"
    assert short.remaining_ms < 5_000 <= short.remaining_ms + short.cost_ms  # stopped at the margin
    ran = [s["stream"] for s in first["streams"]] + ["(idle)"] * first["idle_streams"]
    assert len(ran) == 8
    left = first["not_started"]
    assert first["not_started_count"] == len(left) > 0
    assert metric_lines(capsys)[0]["StreamsLeft"] == len(left)
    shipped_first = len(delivered_ids(hec))
    assert shipped_first == first["totals"]["shipped"]  # committed: nothing shipped is lost

    sim.requests.clear()
    second = handler(SCHEDULED, FakeContext())
    assert second["ok"] and second["not_started_count"] == 0
    # The streams' reads (the org-wide probe, a name-less query, comes first in a second run)
    audited = [r.query["name"] for r in sim.requests if r.path.endswith("/audits") and "name" in r.query]
    assert [f"user/{name}" for name in dict.fromkeys(audited)][: len(left)] == left  # waited longest first
    assert_each_once(hec, org.all_records())


class StoppingContext(FakeContext):
    """Lambda's shutdown SIGTERM (``stop.request``, what the installed handler does) arrives at the
    ``at``-th deadline check: in the middle of the run, with batches in flight."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def get_remaining_time_in_millis(self) -> int:
        if self.asked + 1 == self.at:
            stop.request()
        return super().get_remaining_time_in_millis()


@pytest.mark.parametrize("state", ["dynamodb", "s3"])
def test_a_stop_mid_run_releases_the_lease_and_saves_the_cursor(lambda_env, org, hec, monkeypatch, state):
    if state == "s3":
        monkeypatch.setenv("FORWARDER_STATE", f"s3://{make_bucket()}/forwarder")
    monkeypatch.setenv("FORWARDER_CONCURRENCY", "1")
    try:
        first = handler(SCHEDULED, StoppingContext(at=5))
    finally:
        stop.reset()
    assert first["ok"] and first["not_started_count"] > 0, "a stop is not a failure"
    left = first["not_started"]
    second = handler(SCHEDULED, FakeContext())  # not skipped: the stopped run released its lease
    assert second["ok"] and not second.get("skipped")
    ran = [s["stream"] for s in second["streams"]]
    assert ran[: len(left)] == left  # the cursor the stopped run saved: what it left goes first
    assert_each_once(hec, org.all_records())


def test_runs_cut_short_again_and_again_still_reach_every_stream(lambda_env, org, hec, monkeypatch):
    monkeypatch.setenv("FORWARDER_CONCURRENCY", "1")
    streams = set()
    for _ in range(5):
        report = handler(SCHEDULED, FakeContext(budget_ms=12_000, cost_ms=1_000))  # 7 streams a run
        streams.update(s["stream"] for s in report["streams"])
    assert streams == {f"user/{u.email.lower()}" for u in org.users}
    assert_each_once(hec, org.all_records())


def test_an_invocation_overlapping_a_running_one_is_skipped_not_failed(lambda_env, org, hec, capsys):
    overlapping = []

    def second_invocation(accepted: int) -> None:
        if accepted == 1:  # the first run holds the lease and is shipping right now
            overlapping.append(handler(SCHEDULED, FakeContext()))

    hec.after_accept = second_invocation
    first = handler(SCHEDULED, FakeContext())
    hec.after_accept = None
    [skipped] = overlapping
    assert skipped["skipped"] and "held by" in skipped["skipped"]
    assert skipped["totals"]["streams"] == 0
    assert first["ok"] and not first["skipped"]
    assert [m["SkippedRuns"] for m in metric_lines(capsys)] == [1, 0]
    assert_each_once(hec, org.all_records())


def test_concurrent_invocations_over_one_table_deliver_each_record_once(lambda_env, org, sim, hec):
    sim.latency_seconds = 0.002  # long enough runs that the two overlap
    start = threading.Barrier(2)
    results = []

    def invoke() -> None:
        start.wait()
        results.append(handler(SCHEDULED, FakeContext()))

    threads = [threading.Thread(target=invoke) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and all(r["ok"] for r in results)
    assert_each_once(hec, org.all_records())


# -- failures --------------------------------------------------------------------------------------


def test_a_failed_stream_fails_the_invocation_and_drops_cached_secrets(lambda_env, sim, hec, capsys):
    sim.malform_next(1, kind="html")
    with pytest.raises(RunFailed, match=r"run failed: user/.*JSON"):
        handler(SCHEDULED, FakeContext(budget_ms=900_000))
    assert metric_lines(capsys)[0]["FailedStreams"] == 1
    boto3.client("secretsmanager").update_secret(SecretId="forwarder/hec", SecretString="rotated-token")
    with pytest.raises(RunFailed):  # the rotated token was fetched again, not served from the cache
        handler(SCHEDULED, FakeContext())


def test_bad_configuration_fails_before_any_network_call(lambda_env, sim, monkeypatch):
    monkeypatch.setenv("FORWARDER_FORMAT", "xml")
    monkeypatch.setenv("FORWARDER_DEADLINE_MARGIN", "soon")
    with pytest.raises(ConfigError) as err:
        handler(SCHEDULED, FakeContext())
    assert "FORWARDER_FORMAT" in str(err.value)
    assert not sim.requests


def test_secrets_never_reach_the_logs_or_the_result(lambda_env, hec, capsys):
    result = handler(SCHEDULED, FakeContext())
    out = capsys.readouterr()
    for secret in (DEMO_CLIENT_SECRET, HEC_TOKEN):
        assert secret not in out.out + out.err
        assert secret not in json.dumps(result)


# -- scale -----------------------------------------------------------------------------------------


def test_5000_user_streams_in_20_seconds_stop_in_time_and_the_next_run_continues(
    lambda_env, org, hec, monkeypatch
):
    """5,000 user streams, 25 of them with records, each followed by 199 idle ones. The clock is the
    fake context's: every deadline check costs 35 ms of the 20 s budget, about what a stream costs a
    worker against the real service (an HTTPS call, a token now and then, a state read). So each
    invocation starts some 430 streams, stops at the 5 s margin, and the next one takes up where
    it stopped."""
    real = sorted(u.email.lower() for u in org.users)
    users = []
    for email in real:
        local, domain = email.split("@")
        users += [email] + [f"{local}~idle{n:03d}@{domain}" for n in range(199)]  # sort right after
    assert len(users) == 5000
    monkeypatch.setenv("FORWARDER_USERS", ",".join(users))
    budget_ms, cost_ms, margin_ms, concurrency = 20_000, 35, 5_000, 4

    runs = []
    for _ in range(2):
        context = FakeContext(budget_ms=budget_ms, cost_ms=cost_ms)
        report = handler(SCHEDULED, context)
        assert report["ok"]
        # stopped in time: after the margin was crossed each worker asked once more, then quit
        assert margin_ms - concurrency * cost_ms <= context.remaining_ms < margin_ms
        runs.append(report)
    first, second = runs
    n1, n2 = first["totals"]["streams"], second["totals"]["streams"]
    expected = (budget_ms - margin_ms) // cost_ms
    assert expected - concurrency <= n1 <= expected and expected - concurrency <= n2 <= expected
    assert first["not_started_count"] == 5000 - n1 and first["not_started"][0] == f"user/{users[n1]}"
    # the second run began where the first stopped; the idle streams the first one served are not
    # due yet (tests/scheduling: they wait their turn), the rest is left for the next run
    assert second["not_started_count"] + second["not_due_count"] == 5000 - n2
    assert second["not_due_count"] >= n1 - 5
    assert second["not_started"][0] == f"user/{users[n1 + n2]}"

    reached = users[: n1 + n2 : 200]  # the real users among the streams the two runs served
    assert len(reached) == 5
    records = [r for e in reached for r in org.records_for("user", e, now_us())]
    assert_each_once(hec, records)  # everything the two reached, nothing lost, nothing twice


def test_quarantined_and_future_dated_records_show_in_the_metrics(lambda_env, org, sim, hec, capsys):
    """Every record of the first page is garbage (quarantined), and one is dated 9999."""
    user = org.users[0].email
    org.add_raw_record({"user": user, "action": "login", "created_at": "9999-01-01T00:00:00Z"})
    sim.malform_next(1, kind="not-list-items")
    result = handler(SCHEDULED, FakeContext())
    [emf] = metric_lines(capsys)
    assert emf["QuarantinedEvents"] == result["totals"]["quarantined"] > 0
    # The garbled page may be the dated record's own stream: a short page ends that pass, and the
    # next run reads on. Across the two runs the record is shipped, and counted, exactly once.
    again = handler(SCHEDULED, FakeContext())
    [emf_again] = metric_lines(capsys)
    assert emf["FutureDatedRecords"] == result["totals"]["future"]
    assert emf_again["FutureDatedRecords"] == again["totals"]["future"]
    assert result["totals"]["future"] + again["totals"]["future"] == 1


def test_the_entra_client_secret_comes_from_secrets_manager_or_ssm(aws):
    from handlers.aws_lambda import environment

    boto3.client("secretsmanager").create_secret(Name="entra", SecretString='{"client_secret": "Qx8~s.1"}')
    boto3.client("ssm").put_parameter(Name="/entra", Value="Qx8~s.2", Type="SecureString")
    boto3.client("secretsmanager").create_secret(Name="other", SecretString='{"secret": "Qx8~s.3"}')

    from_secret = environment({"FORWARDER_AZURE_CLIENT_SECRET_SECRET": "secretsmanager:entra"})
    from_parameter = environment({"FORWARDER_AZURE_CLIENT_SECRET_SECRET": "ssm:/entra"})

    assert from_secret["FORWARDER_AZURE_CLIENT_SECRET"] == "Qx8~s.1"
    assert from_parameter["FORWARDER_AZURE_CLIENT_SECRET"] == "Qx8~s.2"
    with pytest.raises(ConfigError) as caught:
        environment({"FORWARDER_AZURE_CLIENT_SECRET_SECRET": "secretsmanager:other"})
    assert caught.value.problems == [
        "FORWARDER_AZURE_CLIENT_SECRET_SECRET: secretsmanager:other holds JSON without a client_secret field"
    ]


def test_every_invocation_sends_a_health_event_through_the_sink(lambda_env, org, hec):
    first = handler(SCHEDULED, FakeContext())
    handler(SCHEDULED, FakeContext())
    envelopes = hec.health_events()
    assert [e["sourcetype"] for e in envelopes] == ["emailauth:audit:health"] * 2
    health = [e["event"]["emailauth"]["forwarder"] for e in envelopes]
    assert [h["status"] for h in health] == ["success", "success"]
    assert {h["runtime"] for h in health} == {"lambda"} and len({h["forwarder_id"] for h in health}) == 1
    assert [h["records"]["shipped"] for h in health] == [first["totals"]["shipped"], 0]
    assert first["totals"]["shipped"] == len(delivered_ids(hec))  # the health events are no audit events
    assert HEC_TOKEN not in json.dumps(envelopes) and DEMO_CLIENT_SECRET not in json.dumps(envelopes)
