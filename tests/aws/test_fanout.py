"""Fan-out end to end on real local parts: the moto server (SQS FIFO, DynamoDB, Secrets Manager,
S3), one simulator per organization, the test HEC receiver, and tests/aws/esm.py playing the
event source mapping with worker processes."""

from __future__ import annotations

import json
import os
import signal
import time

import boto3
import pytest

from forwarder import credentials, stop
from forwarder.fanout.workitem import WorkItem
from forwarder.records import event_id
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import org_secret, organizations
from forwarder.timeutil import now_us
from handlers import aws_lambda, aws_planner, aws_worker
from handlers.lambda_runtime import RunFailed
from tests.aws.conftest import make_bucket, make_table
from tests.aws.esm import EventSourceMapping, lambda_event, overlaps
from tests.aws.test_handler import FakeContext
from tests.e2e.helpers import HEC_TOKEN, expected_for_users, ids_by_index, quiet_users
from tests.receivers import hec as hec_receiver

STREAMS_PER_TENANT = 100
_queues = iter(range(1, 10_000))


@pytest.fixture(scope="module")
def orgs():
    return [generate_org(500 + i) for i in range(50)]


@pytest.fixture(autouse=True)
def fast_servers(monkeypatch):
    # Without TCP_NODELAY each response waits out the client's delayed ACK (40 ms).
    monkeypatch.setattr(hec_receiver._Handler, "disable_nagle_algorithm", True, raising=False)
    credentials.forget()
    yield
    credentials.forget()


def users_of(index, org):
    real = quiet_users(org)
    idle = [f"idle{n:03d}@org{index}.example" for n in range(STREAMS_PER_TENANT - len(real))]
    return real + idle


def make_queue():
    sqs = boto3.client("sqs")
    n = next(_queues)
    dlq = sqs.create_queue(QueueName=f"work-dlq-{n}.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = sqs.create_queue(
        QueueName=f"work-{n}.fifo",
        Attributes={
            "FifoQueue": "true",
            "VisibilityTimeout": "60",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"}),
        },
    )["QueueUrl"]
    return url, dlq


def install(monkeypatch, tmp_path, sims, orgs, hec, shard_size=25, secrets=None, refs=None):
    """Secrets, the tenants document in S3, the table and the queue; the environment set for the
    planner and the worker processes. Returns (queue URL, DLQ URL, tenants document)."""
    sm = boto3.client("secretsmanager")
    tenants = []
    for i, (sim, org) in enumerate(zip(sims, orgs)):
        secret = (secrets or {}).get(i, org_secret(i))
        sm.create_secret(
            Name=f"tenant/{i}", SecretString=json.dumps({"client_id": f"org-{i}", "client_secret": secret})
        )
        tenants.append(
            {
                "name": f"org{i}",
                "api_url": sim.base_url,
                "credentials": (refs or {}).get(i, f"secretsmanager:tenant/{i}"),
                "users": users_of(i, org),
                "object_types": ["user"],
                "hec_index": f"idx{i}",
            }
        )
    bucket = make_bucket()
    boto3.client("s3").put_object(
        Bucket=bucket, Key="tenants.json", Body=json.dumps({"tenants": tenants}).encode()
    )
    url, dlq = make_queue()
    env = {
        "FORWARDER_TENANTS": f"s3://{bucket}/tenants.json",
        "FORWARDER_STATE": f"dynamodb://{make_table()}",
        "FORWARDER_QUARANTINE": f"s3://{bucket}/quarantine",
        "FORWARDER_SINK": hec.url,
        "FORWARDER_SINK_TOKEN": HEC_TOKEN,
        "FORWARDER_QUEUE_URL": url,
        "FORWARDER_SHARD_SIZE": str(shard_size),
        "FORWARDER_INITIAL_LOOKBACK": "13mo",
        "FORWARDER_DEADLINE_MARGIN": "5s",
        "FORWARDER_LOG_LEVEL": "ERROR",
        "FORWARDER_TENANT_CONCURRENCY": "8",
    }
    for name in [k for k in os.environ if k.startswith("FORWARDER_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return url, dlq, tenants


def queue_depth(url):
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


# -- at scale --------------------------------------------------------------------------------------


def test_50_tenants_of_100_streams_with_4_workers_nothing_lost_or_doubled(
    aws, monkeypatch, tmp_path, orgs, hec
):
    with organizations(orgs) as sims:
        url, dlq, tenants = install(monkeypatch, tmp_path, sims, orgs, hec)
        planned = aws_planner.handler({}, FakeContext())
        assert [t["shards"] for t in planned["tenants"]] == [4] * 50
        assert queue_depth(url) == 200

        invocations = EventSourceMapping(url, workers=4).run_until_drained()
        outcomes = [o for i in invocations for o in i.outcomes]
        # A shard may fail once on a loaded machine (a timeout) and come back: retried, never lost.
        # A done shard whose message outlived its visibility timeout before its delete comes back
        # too (SQS delivers at least once) and is done again with nothing new: the sink checks
        # below prove nothing lost or doubled.
        assert outcomes.count("done") >= 200 and set(outcomes) <= {"done", "retry"}
        assert len({i.pid for i in invocations}) > 1, "the workers ran in parallel"
        assert overlaps(invocations) == [], "two workers held one tenant at once"
        got = ids_by_index(hec.events())
        for i, (tenant, org) in enumerate(zip(tenants, orgs)):
            ids = got.get(f"idx{i}", [])
            assert len(ids) == len(set(ids)), f"tenant org{i}: an event was delivered twice"
            assert sorted(ids) == expected_for_users(org, tenant["users"]), f"tenant org{i}: events lost"
        assert queue_depth(dlq) == 0


# -- failures --------------------------------------------------------------------------------------


def test_a_worker_killed_mid_shard_loses_nothing(aws, monkeypatch, tmp_path, orgs, hec):
    with organizations(orgs[:2]) as sims:
        url, _, tenants = install(monkeypatch, tmp_path, sims, orgs[:2], hec, shard_size=100)
        aws_planner.handler({}, FakeContext())
        mapping = EventSourceMapping(url, workers=1, visibility_timeout=3)
        killed, first_batch = [], []

        def kill_the_worker(accepted):
            if accepted == 1 and not killed:  # events stored, the reply (and the commit) never come
                first_batch.extend(hec.event_ids())
                killed.append(mapping.processes[0].pid)
                os.kill(killed[0], signal.SIGKILL)

        hec.after_accept = kill_the_worker
        mapping.run_until_drained()
        hec.after_accept = None
        assert killed
        got = ids_by_index(hec.events())
        for i, (tenant, org) in enumerate(zip(tenants, orgs[:2])):
            assert sorted(set(got[f"idx{i}"])) == expected_for_users(org, tenant["users"]), (
                "an event was lost"
            )
        ids = [i for idx in got.values() for i in idx]
        doubled = {i for i in ids if ids.count(i) > 1}
        assert doubled <= set(first_batch)  # at most the batch in flight when it died, same ids
        assert mapping.invocations and all(o == "done" for i in mapping.invocations for o in i.outcomes)

        # every cycle closed: the next tick plans both tenants again, and it ships nothing new
        total = len(hec.events())
        again = aws_planner.handler({}, FakeContext())
        assert all(t["busy"] is None and t["shards"] == 1 for t in again["tenants"])
        EventSourceMapping(url, workers=2).run_until_drained()
        assert len(hec.events()) == total


def test_a_tenant_with_revoked_credentials_fails_alone(aws, monkeypatch, tmp_path, orgs, hec):
    with organizations(orgs[:4]) as sims:
        url, dlq, tenants = install(
            monkeypatch,
            tmp_path,
            sims,
            orgs[:4],
            hec,
            shard_size=50,
            secrets={1: "revoked-secret"},
            refs={3: "secretsmanager:tenant/gone"},
        )
        with pytest.raises(RunFailed, match=r"tenant org3: .*tenant/gone.*ResourceNotFoundException"):
            aws_planner.handler({}, FakeContext())
        assert queue_depth(url) == 6  # org0, org1 and org2 were queued all the same

        invocations = EventSourceMapping(url, workers=3).run_until_drained()
        got = ids_by_index(hec.events())
        assert set(got) == {"idx0", "idx2"}
        for i in (0, 2):
            assert sorted(got[f"idx{i}"]) == expected_for_users(orgs[i], tenants[i]["users"])
        failed = [i for i in invocations if "org1" in i.groups]
        assert failed and all(o == "retry" for i in failed for o in i.outcomes)
        assert queue_depth(dlq) == 2  # both of org1's shards, after three tries each


# -- one invocation --------------------------------------------------------------------------------


def receive(url, n=10):
    return (
        boto3.client("sqs")
        .receive_message(QueueUrl=url, MaxNumberOfMessages=n, AttributeNames=["MessageGroupId"])
        .get("Messages", [])
    )


def test_the_deadline_requeues_what_the_worker_did_not_start(aws, monkeypatch, tmp_path, orgs, hec, capsys):
    with organizations(orgs[:1]) as sims:
        url, _, tenants = install(monkeypatch, tmp_path, sims, orgs[:1], hec, shard_size=100)
        monkeypatch.setenv("FORWARDER_CONCURRENCY", "1")
        aws_planner.handler({}, FakeContext())
        [message] = receive(url)
        # 5 s margin, 1 s per deadline check: the worker starts 8 streams, then stops
        result = aws_worker.handler(lambda_event([message]), FakeContext(budget_ms=13_000, cost_ms=1_000))
        assert result == {"batchItemFailures": [], "outcomes": {message["MessageId"]: "requeued"}}
        boto3.client("sqs").delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        [rest] = receive(url)
        item = WorkItem.from_body(rest["Body"])
        assert item.part == 1 and item.tenant == "org0" and len(item.streams) == STREAMS_PER_TENANT - 8
        assert rest["Attributes"]["MessageGroupId"] == "org0"

        done = aws_worker.handler(lambda_event([rest]), FakeContext())
        assert done["outcomes"] == {rest["MessageId"]: "done"}
        ids = ids_by_index(hec.events())["idx0"]
        assert sorted(ids) == expected_for_users(orgs[0], tenants[0]["users"]) and len(ids) == len(set(ids))
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
        emf = [line for line in lines if "StreamsLeft" in line]  # the worker's, not the planner's
        assert emf and all(e["Tenant"] == "org0" for e in emf)
        assert emf[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
            ["FunctionName"],
            ["FunctionName", "Tenant"],
        ]
        assert emf[0]["StreamsLeft"] == STREAMS_PER_TENANT - 8 and emf[1]["StreamsLeft"] == 0


def test_sigterm_sends_the_item_in_flight_and_the_rest_back_whole(aws, monkeypatch, tmp_path, orgs, hec):
    with organizations(orgs[:2]) as sims:
        url, _, tenants = install(monkeypatch, tmp_path, sims, orgs[:2], hec, shard_size=100)
        aws_planner.handler({}, FakeContext())
        messages = sorted(receive(url), key=lambda m: m["Attributes"]["MessageGroupId"])  # org0 first
        in_flight = []

        def terminate(accepted):
            if accepted == 1:  # one batch delivered: Lambda shuts the environment down
                in_flight.extend(hec.event_ids())
                os.kill(os.getpid(), signal.SIGTERM)
                handled_by = time.monotonic() + 30  # the handler runs on the main thread, soon
                while not stop.requested() and time.monotonic() < handled_by:
                    time.sleep(0.01)

        previous = signal.signal(signal.SIGTERM, lambda *_: None)  # without a handler of its own: ignored
        hec.after_accept = terminate
        try:
            result = aws_worker.handler(lambda_event(messages), FakeContext())
        finally:
            hec.after_accept = None
            signal.signal(signal.SIGTERM, previous)
            stop.reset()

        assert result["outcomes"] == {
            messages[0]["MessageId"]: "retry",
            messages[1]["MessageId"]: "not_started",
        }
        assert len(result["batchItemFailures"]) == 2  # both come back to the queue as they were
        assert queue_depth(url) == 0  # and nothing was re-queued as a part of an item
        assert "idx1" not in ids_by_index(hec.events())

        again = aws_worker.handler(lambda_event(messages), FakeContext())  # another worker redoes them
        assert set(again["outcomes"].values()) == {"done"}
        got = ids_by_index(hec.events())
        for i, (tenant, org) in enumerate(zip(tenants, orgs[:2])):
            assert sorted(set(got[f"idx{i}"])) == expected_for_users(org, tenant["users"]), (
                "an event was lost"
            )
        ids = [i for idx in got.values() for i in idx]
        assert {i for i in ids if ids.count(i) > 1} <= set(in_flight)  # at most what was in flight


def test_a_stop_before_the_plan_is_not_done(aws, monkeypatch, tmp_path, orgs, hec):
    """A run stopped while planning ships nothing and reports no failure: the item must not count as
    done, or its shard would close its cycle undelivered."""
    with organizations(orgs[:1]) as sims:
        url, _, _ = install(monkeypatch, tmp_path, sims, orgs[:1], hec, shard_size=100)
        aws_planner.handler({}, FakeContext())
        [message] = receive(url)
        tenants_read = aws_worker.tenants_or_single

        def stopped_once_read(env):
            tenants = tenants_read(env)
            stop.request()
            return tenants

        monkeypatch.setattr(aws_worker, "tenants_or_single", stopped_once_read)
        try:
            result = aws_worker.handler(lambda_event([message]), FakeContext())
        finally:
            stop.reset()
        monkeypatch.setattr(aws_worker, "tenants_or_single", tenants_read)

        assert result["outcomes"] == {message["MessageId"]: "retry"} and hec.events() == []
        busy = aws_planner.handler({}, FakeContext())["tenants"][0]["busy"]
        assert busy is not None and "still has 1 shard(s)" in busy  # the cycle still waits for it


def test_sigterm_while_planning_queues_nothing_and_fails_nothing(aws, monkeypatch, tmp_path, orgs, hec):
    """Lambda's SIGTERM while the planner plans its first tenant: that tenant's planning is abandoned
    before its cycle opens, no other tenant starts, nothing is queued, the invocation does not fail;
    the next tick plans every tenant (none was left looking busy)."""
    from forwarder.fanout import planner

    with organizations(orgs[:3]) as sims:
        url, _, _ = install(monkeypatch, tmp_path, sims, orgs[:3], hec, shard_size=100)
        monkeypatch.setenv("FORWARDER_TENANT_CONCURRENCY", "1")  # the tenants one after another
        planned = planner.plan

        def terminated_while_planning(settings, client, scheduler=None):
            os.kill(os.getpid(), signal.SIGTERM)  # Lambda shuts the environment down
            handled_by = time.monotonic() + 30  # the handler runs on the main thread, soon
            while not stop.requested() and time.monotonic() < handled_by:
                time.sleep(0.01)
            return planned(settings, client, scheduler)

        monkeypatch.setattr(planner, "plan", terminated_while_planning)
        previous = signal.signal(signal.SIGTERM, lambda *_: None)  # without a handler of its own: ignored
        try:
            result = aws_planner.handler({}, FakeContext())
        finally:
            signal.signal(signal.SIGTERM, previous)
            stop.reset()
        monkeypatch.setattr(planner, "plan", planned)

        assert result["ok"] and result["stopped"]
        assert [(t["tenant"], t["stopped"], t["error"], t["shards"]) for t in result["tenants"]] == [
            (f"org{i}", True, None, 0) for i in range(3)
        ]
        assert queue_depth(url) == 0
        again = aws_planner.handler({}, FakeContext())
        assert not again["stopped"] and [t["shards"] for t in again["tenants"]] == [1, 1, 1]


def test_a_stop_before_the_tenants_are_read_ends_both_handlers_cleanly(aws, monkeypatch, tmp_path, orgs, hec):
    """The tenants document is read under the stop too: the planner plans nothing and does not fail,
    the worker hands every message back untouched."""
    with organizations(orgs[:1]) as sims:
        url, _, _ = install(monkeypatch, tmp_path, sims, orgs[:1], hec, shard_size=100)
        aws_planner.handler({}, FakeContext())
        [message] = receive(url)
        stop.request()
        try:
            planned = aws_planner.handler({}, FakeContext())
            worked = aws_worker.handler(lambda_event([message]), FakeContext())
        finally:
            stop.reset()

        assert planned == {"ok": True, "stopped": True, "tenants": []}
        assert worked == {
            "batchItemFailures": [{"itemIdentifier": message["MessageId"]}],
            "outcomes": {message["MessageId"]: "not_started"},
        }
        assert hec.events() == []


def test_a_batch_stops_at_the_first_failure_and_returns_the_rest(aws, monkeypatch, tmp_path, orgs, hec):
    with organizations(orgs[:2]) as sims:
        url, _, _ = install(monkeypatch, tmp_path, sims, orgs[:2], hec, shard_size=100, secrets={0: "wrong"})
        aws_planner.handler({}, FakeContext())
        messages = sorted(receive(url), key=lambda m: m["Attributes"]["MessageGroupId"])  # org0 first
        assert len(messages) == 2
        junk = {"MessageId": "junk", "ReceiptHandle": "x", "Body": "<html>"}
        result = aws_worker.handler(lambda_event([messages[0], junk, messages[1]]), FakeContext())
        assert result["outcomes"] == {
            messages[0]["MessageId"]: "retry",
            "junk": "not_started",
            messages[1]["MessageId"]: "not_started",
        }
        assert len(result["batchItemFailures"]) == 3
        assert "wrong" not in json.dumps(result)


def test_bad_tenant_settings_fail_the_planner_before_any_network_call(aws, monkeypatch, tmp_path, orgs, hec):
    with organizations(orgs[:2]) as sims:
        install(monkeypatch, tmp_path, sims, orgs[:2], hec)
        monkeypatch.setenv("FORWARDER_SHARD_SIZE", "0")
        with pytest.raises(Exception, match="FORWARDER_SHARD_SIZE"):
            aws_planner.handler({}, FakeContext())
        assert not any(sim.requests for sim in sims)


def test_a_tenant_still_busy_is_not_planned_again(aws, monkeypatch, tmp_path, orgs, hec):
    with organizations(orgs[:1]) as sims:
        url, _, _ = install(monkeypatch, tmp_path, sims, orgs[:1], hec, shard_size=40)
        first = aws_planner.handler({}, FakeContext())["tenants"][0]
        assert first["shards"] == 3 and queue_depth(url) == 3
        second = aws_planner.handler({}, FakeContext())["tenants"][0]
        assert second["shards"] == 0 and "still has 3 shard(s)" in second["busy"]
        assert queue_depth(url) == 3
        monkeypatch.setenv("FORWARDER_CYCLE_MAX_AGE", "0s")  # a cycle that old no longer counts
        third = aws_planner.handler({}, FakeContext())["tenants"][0]
        assert third["shards"] == 3 and queue_depth(url) == 6


def test_the_next_cycle_queues_only_what_the_scheduler_needs(aws, monkeypatch, tmp_path, orgs, hec):
    """The workers tell the tenant's scheduler document what they polled: the next tick queues the
    streams that delivered (hot) and one turn of the idle ones, not all 100 again."""
    with organizations(orgs[:1]) as sims:
        url, _, _ = install(monkeypatch, tmp_path, sims, orgs[:1], hec, shard_size=40)
        assert aws_planner.handler({}, FakeContext())["tenants"][0]["streams"] == 100
        EventSourceMapping(url, workers=1).run_until_drained()
        assert ids_by_index(hec.events())["idx0"]
        again = aws_planner.handler({}, FakeContext())["tenants"][0]
        hot = len(quiet_users(orgs[0]))  # the real users delivered: hot for the next hour
        # 5-minute schedule: idle users within 30 minutes, a lap in 5 cycles (a fifth of a turn
        # that does not divide evenly is spread over the cycles)
        turn = again["streams"] - hot
        assert turn in ((100 - hot) // 5, -(-(100 - hot) // 5)) and again["not_due"] == 100 - again["streams"]


def test_where_the_org_wide_index_is_honoured_the_planner_queues_the_streams_it_names(
    aws, monkeypatch, tmp_path, orgs, hec
):
    """The planner asks the name-less query which streams hold new records and queues those, the
    other streams being backstops (a few a day), instead of the hot ones and a turn of the rest."""
    with organizations(orgs[:1], nameless="org-wide") as sims:
        sim = sims[0]
        url, _, _ = install(monkeypatch, tmp_path, sims, orgs[:1], hec, shard_size=40)
        assert aws_planner.handler({}, FakeContext())["tenants"][0]["streams"] == 100  # first reads
        EventSourceMapping(url, workers=1).run_until_drained()
        quiet = aws_planner.handler({}, FakeContext())["tenants"][0]  # the query probed: honoured
        assert quiet["streams"] <= 1  # nothing new: a backstop at most, where hot + a turn took 20+
        EventSourceMapping(url, workers=1).run_until_drained()
        real = {u.email: u for u in sim.org.users}
        actors = [real[email] for email in quiet_users(orgs[0])]
        made = {event_id(sim.org.add_action(now_us(), actor)) for actor in actors}
        since = len(sim.requests)
        named = aws_planner.handler({}, FakeContext())["tenants"][0]
        EventSourceMapping(url, workers=1).run_until_drained()
        polled = {r.query["name"].lower() for r in sim.requests[since:] if r.query.get("name")}
        after = aws_planner.handler({}, FakeContext())["tenants"][0]
    assert named["streams"] <= 3 and {a.email.lower() for a in actors} <= polled and len(polled) <= 3
    assert made <= set(ids_by_index(hec.events())["idx0"])  # no org-wide stream: the workers read them
    # Read, they are named no more, and what the workers read showed no lie: still a backstop at most.
    assert after["streams"] <= 1


# -- single mode with tenants ----------------------------------------------------------------------


def emf_lines(capsys):
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return {line["Tenant"]: line for line in lines if "_aws" in line}


def test_every_tenant_in_one_invocation(aws, monkeypatch, tmp_path, orgs, hec, capsys):
    with organizations(orgs[:3]) as sims:
        _, _, tenants = install(monkeypatch, tmp_path, sims, orgs[:3], hec)
        result = aws_lambda.handler({}, FakeContext())
        assert result["ok"] and sorted(result["tenants"]) == ["org0", "org1", "org2"]
        got = ids_by_index(hec.events())
        for i in range(3):
            assert sorted(got[f"idx{i}"]) == expected_for_users(orgs[i], tenants[i]["users"])
        metrics = emf_lines(capsys)
        assert sorted(metrics) == ["org0", "org1", "org2"]
        assert metrics["org1"]["ShippedEvents"] == len(got["idx1"])
        assert aws_lambda.handler({}, FakeContext())["tenants"]["org2"]["totals"]["shipped"] == 0


def test_a_failing_tenant_fails_the_invocation_after_the_others_delivered(
    aws, monkeypatch, tmp_path, orgs, hec
):
    with organizations(orgs[:3]) as sims:
        _, _, tenants = install(monkeypatch, tmp_path, sims, orgs[:3], hec, secrets={2: "revoked-secret"})
        with pytest.raises(RunFailed, match=r"^tenant org2: run failed: .*401") as err:
            aws_lambda.handler({}, FakeContext())
        assert "org0" not in str(err.value) and "revoked-secret" not in str(err.value)
        got = ids_by_index(hec.events())
        assert set(got) == {"idx0", "idx1"}
        assert sorted(got["idx0"]) == expected_for_users(orgs[0], tenants[0]["users"])


# -- moving between modes --------------------------------------------------------------------------


def test_single_mode_then_fanout_resends_nothing(aws, monkeypatch, orgs, hec):
    """One organization without a tenants document: fan-out runs it as tenant ``default`` over the
    very state keys the single function wrote, so the switch re-sends nothing."""
    from forwarder.state import open_store

    users = quiet_users(orgs[0], 3)
    with organizations(orgs[:1]) as [sim]:
        url, _ = make_queue()
        env = {
            "FORWARDER_API_URL": sim.base_url,
            "FORWARDER_CLIENT_ID": "org-0",
            "FORWARDER_CLIENT_SECRET": org_secret(0),
            "FORWARDER_USERS": ",".join(users),
            "FORWARDER_OBJECT_TYPES": "user",
            "FORWARDER_STATE": f"dynamodb://{make_table()}",
            "FORWARDER_SINK": hec.url,
            "FORWARDER_SINK_TOKEN": HEC_TOKEN,
            "FORWARDER_INITIAL_LOOKBACK": "13mo",
            "FORWARDER_QUEUE_URL": url,
            "FORWARDER_DEADLINE_MARGIN": "5s",
        }
        for name in [k for k in os.environ if k.startswith("FORWARDER_")]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        single = aws_lambda.handler({}, FakeContext())
        store = open_store(env["FORWARDER_STATE"])
        keys = store.keys()
        assert single["totals"]["shipped"] > 0 and keys == sorted(f"user/{u.lower()}" for u in users)

        later = orgs[0].add_late_record(now_us() - 60_000_000)  # one new record for one of them
        monkeypatch.setenv("FORWARDER_USERS", ",".join([*users, later["user"]]))
        planned = aws_planner.handler({}, FakeContext())
        assert [t["tenant"] for t in planned["tenants"]] == ["default"]
        [message] = receive(url)
        result = aws_worker.handler(lambda_event([message]), FakeContext())
        assert result["outcomes"] == {message["MessageId"]: "done"}
        ids = [e["event"]["event"]["id"] for e in hec.events()]
        assert len(ids) == len(set(ids)), "the switch re-sent events"
        assert set(store.keys()) >= set(keys)  # the same keys, not a namespace of their own


def test_each_work_item_and_each_tenant_of_a_single_invocation_sends_its_health(
    aws, monkeypatch, tmp_path, orgs, hec
):
    with organizations(orgs[:2]) as sims:
        url, _, _ = install(monkeypatch, tmp_path, sims, orgs[:2], hec, shard_size=100)
        planned = aws_planner.handler({}, FakeContext())
        items = sum(t["shards"] for t in planned["tenants"])
        EventSourceMapping(url, workers=1).run_until_drained()
        worker = hec.health_events()
        assert len(worker) >= items  # one per item run (a retried item runs again)
        by_tenant = {}
        for envelope in worker:
            run = envelope["event"]["emailauth"]["forwarder"]
            assert run["runtime"] == "lambda-worker" and envelope["index"] == f"idx{run['tenant'][3:]}"
            by_tenant.setdefault(run["tenant"], set()).add(run["forwarder_id"])
        assert sorted(by_tenant) == ["org0", "org1"] and all(len(ids) == 1 for ids in by_tenant.values())

        aws_lambda.handler({}, FakeContext())  # every tenant in one invocation: one health event each
        single = hec.health_events()[len(worker) :]
        runs = sorted(
            (e["event"]["emailauth"]["forwarder"]["tenant"], e["event"]["emailauth"]["forwarder"]["runtime"])
            for e in single
        )
        assert runs == [("org0", "lambda"), ("org1", "lambda")]
        assert {e["event"]["emailauth"]["forwarder"]["forwarder_id"] for e in single} == {
            ids.pop() for ids in by_tenant.values()
        }  # the same forwarders, whichever mode ran them
