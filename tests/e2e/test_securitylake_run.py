"""Whole runs of the forwarder into Security Lake, from the simulator through a loopback front of
the moto server (``S3Front``) that stages S3's faults: every record of the organization lands once
as an OCSF 1.3 row of its class's custom source, across 5xx answers, an answer lost after the object
was stored and a dropped connection, and across a process killed between objects (the next run
finds the objects the killed one left in the pending-objects journal: delivery/journal.py); a
second run adds nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter

import boto3
import pytest

from forwarder.app import run_once
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us, parse_iso
from tests.e2e.helpers import env_for, expected_ids, settings_for
from tests.normalize.ocsf_check import OCSF_1_3, OcsfSchema
from tests.receivers.s3_front import S3Front
from tests.sinks.helpers import lake_objects

pytest.importorskip("pyarrow")

LOOKBACK = "60d"  # two months of the organization's history: a few hundred objects, not thousands
LOOKBACK_US = 60 * 86400 * 1_000_000
LAKE = "aws-security-data-lake-us-east-1-e2e"
SINK = f"securitylake://{LAKE}/ext/emailauth"


def expected(org):
    floor = now_us() - LOOKBACK_US
    return expected_ids(r for r in org.all_records() if parse_iso(r["created_at"]) >= floor)


@pytest.fixture
def front(aws, monkeypatch):
    boto3.client("s3").create_bucket(Bucket=LAKE)
    with S3Front(aws) as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", server.http_url)
        yield server


def lake_ids():
    return Counter(row["metadata"]["uid"] for rows in lake_objects(LAKE).values() for row in rows)


def test_the_whole_organization_lands_once_across_s3_faults(front, tmp_path):
    org = generate_org(5)
    front.fail_next(1, status=503)
    front.accept_then_fail_next(1)  # stored, then a 503: the object is written again, same key
    front.drop_connection_next(1)
    front.fail_next(1, status=500)
    with Simulator(org) as sim:
        settings = settings_for(
            sim.base_url,
            SINK,
            str(tmp_path / "state"),
            FORWARDER_FORMAT="ocsf",
            FORWARDER_BATCH_EVENTS="500",
            FORWARDER_INITIAL_LOOKBACK=LOOKBACK,
        )
        first = run_once(settings)
        assert first.ok, first.to_dict()
        assert front.puts, "nothing reached the front"
        front.phase = 2
        second = run_once(settings)
    assert second.ok and second.totals()["shipped"] == 0
    assert {seen.status for seen in front.seen()} >= {503, 500, None}, "the faults were not met"
    assert [put for put in front.puts if put[0] == 2] == []
    ids = lake_ids()
    assert sorted(ids) == expected(org)
    assert max(ids.values()) == 1, "a row twice"
    schema = OcsfSchema(OCSF_1_3)
    assert [p for rows in lake_objects(LAKE).values() for row in rows for p in schema.check_event(row)] == []


def start_run(env):
    return subprocess.Popen(
        [sys.executable, "-m", "forwarder", "run"],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_a_run_killed_between_objects_lands_every_record_exactly_once(front, tmp_path):
    org = generate_org(9)
    env = {
        "FORWARDER_FORMAT": "ocsf",
        "FORWARDER_BATCH_EVENTS": "100",
        "FORWARDER_CONCURRENCY": "4",
        "FORWARDER_INITIAL_LOOKBACK": LOOKBACK,
    }
    with Simulator(org) as sim:
        proc = start_run(env_for(sim.base_url, SINK, str(tmp_path / "state"), **env))
        killed = threading.Event()

        def kill_after(count):
            if (
                count >= 40 and not killed.is_set()
            ):  # within the first batches: objects of one left half-written
                killed.set()
                os.kill(proc.pid, signal.SIGKILL)

        front.after_put = kill_after
        assert proc.wait(timeout=120) == -signal.SIGKILL
        front.after_put = None
        first_keys = {key for _, key in front.puts}
        front.phase = 2
        second = start_run(env_for(sim.base_url, SINK, str(tmp_path / "state"), **env))
        _, err = second.communicate(timeout=180)
        assert second.returncode == 0, err.decode()[-2000:]
        front.phase = 3
        third = start_run(env_for(sim.base_url, SINK, str(tmp_path / "state"), **env))
        _, err = third.communicate(timeout=180)
        assert third.returncode == 0, err.decode()[-2000:]
        assert [put for put in front.puts if put[0] == 3] == [], "the third run found something new"

    objects = lake_objects(LAKE)
    ids = Counter(row["metadata"]["uid"] for rows in objects.values() for row in rows)
    assert sorted(ids) == expected(org), "a record lost, or a row that is no record"
    twice = sorted(i for i, n in ids.items() if n > 1)
    assert twice == [], f"{len(twice)} records landed twice"
    assert first_keys & set(objects), "the kill left no object of the first run"
