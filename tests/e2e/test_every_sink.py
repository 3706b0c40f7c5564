"""One whole run of the forwarder into each sink, from the simulator: every record arrives once,
carrying its event id, and a second run adds nothing."""

from __future__ import annotations

import functools
import gzip
import json

import boto3
import pytest

from forwarder import app
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us, parse_iso
from tests.e2e.helpers import expected_ids, settings_for
from tests.fakes import NO_WAITS
from tests.receivers.bulk import BulkReceiver
from tests.receivers.http_collector import HttpCollector
from tests.sinks.helpers import firehose_into_bucket, lake_objects

# The waits between tries are handed in and not slept: a retry tries again at once.
run_once = functools.partial(app.run_once, pace=NO_WAITS)

LOOKBACK_US = 13 * 31 * 86400 * 1_000_000
ORG = generate_org(21)


@pytest.fixture
def sim():
    with Simulator(ORG) as s:
        yield s


def expected():
    floor = now_us() - LOOKBACK_US
    return expected_ids(r for r in ORG.all_records() if parse_iso(r["created_at"]) >= floor)


def domains():
    return ",".join(d.name for d in ORG.domains if d.destroyed_us is None)


def run_twice(sim, sink, tmp_path, **extra):
    settings = settings_for(sim.base_url, sink, str(tmp_path / "state"), FORWARDER_DOMAINS=domains(), **extra)
    first = run_once(settings)
    assert first.ok, first.to_dict()
    second = run_once(settings)
    assert second.ok and second.totals()["shipped"] == 0
    return first


def test_elasticsearch(sim, tmp_path):
    with BulkReceiver() as es:
        run_twice(sim, es.url, tmp_path, FORWARDER_SINK_TOKEN=es.encoded_api_key())
        assert sorted(es.ids("logs-emailauth.audit-default")) == expected()


def test_http_ndjson(sim, tmp_path):
    with HttpCollector(authorization="Bearer collector-token-1") as collector:
        run_twice(sim, collector.url, tmp_path, FORWARDER_SINK_TOKEN="collector-token-1")
        ids = [event["event"]["id"] for event in collector.json_lines()]
        assert sorted(ids) == expected()


def s3_lines(bucket):
    s3 = boto3.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    body = b"".join(s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys)
    return keys, body


def test_s3(aws, sim, tmp_path):
    boto3.client("s3").create_bucket(Bucket="audit-events")
    run_twice(sim, "s3://audit-events/emailauth", tmp_path)
    keys, _ = s3_lines("audit-events")
    assert all(k.startswith("emailauth/year=") and k.endswith(".ndjson.gz") for k in keys)
    s3 = boto3.client("s3")
    lines = [
        line
        for k in keys
        for line in gzip.decompress(s3.get_object(Bucket="audit-events", Key=k)["Body"].read()).splitlines()
    ]
    assert sorted(json.loads(line)["event"]["id"] for line in lines) == expected()


def test_firehose(aws, sim, tmp_path):
    firehose_into_bucket("audit", "fh-dest")
    run_twice(sim, "firehose://audit", tmp_path)
    _, body = s3_lines("fh-dest")
    assert sorted(json.loads(line)["event"]["id"] for line in body.splitlines()) == expected()


def test_file_in_ocsf(sim, tmp_path):
    path = tmp_path / "events.ndjson"
    run_twice(sim, path.as_uri(), tmp_path, FORWARDER_FORMAT="ocsf")
    ids = [json.loads(line)["metadata"]["uid"] for line in path.read_text().splitlines()]
    assert sorted(ids) == expected()


def test_securitylake(aws, sim, tmp_path):
    pytest.importorskip("pyarrow")
    boto3.client("s3").create_bucket(Bucket="security-lake")
    lake = "securitylake://security-lake/ext/emailauth"
    run_twice(sim, lake, tmp_path, FORWARDER_FORMAT="ocsf", FORWARDER_BATCH_EVENTS="5000")
    objects = lake_objects("security-lake")
    assert all(key.startswith("ext/emailauth-") and ".zstd.parquet" in key for key in objects)
    assert sorted(row["metadata"]["uid"] for rows in objects.values() for row in rows) == expected()
