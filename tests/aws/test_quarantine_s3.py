"""The S3 quarantine through `quarantine list` and `quarantine replay`: against the moto server, entries
leave only once the sink proved acceptance; against a bucket that is not there, or an endpoint that
never answers, trickles its body or lists forever, each command ends within FORWARDER_HTTP_TIMEOUT
with exit 1 and a message naming the bucket, never a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import boto3
import pytest

from forwarder import aws
from forwarder.errors import StateError
from forwarder.events import Event, Rejection
from forwarder.quarantine import open_quarantine, unplaceable
from forwarder.quarantine.s3 import S3Quarantine
from tests.aws.conftest import connections
from tests.e2e.helpers import cli, env_for
from tests.sinks.test_aws_deadline import outcome_of  # what a call raised, on a guarded thread

STREAM = "user/alice@example.com"
GUARD_S = 60  # only a command that ignores its deadline reaches this
UNPLACEABLE = {"user": "alice@example.com", "created_at": None}


def refused(n: int) -> Rejection:
    eid = f"{n:064x}"
    body = json.dumps({"@timestamp": "2026-01-02T03:04:05.000Z", "event": {"id": eid}, "n": n}).encode()
    return Rejection(Event(eid, 1_767_323_045_000_000, body), "mapper_parsing_exception: [n]")


def objects(bucket: str) -> list:
    listing = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix="dead-letters/")
    return sorted(item["Key"] for item in listing.get("Contents", []))


def env(tmp_path, sink: str, quarantine: str, **extra: str) -> dict:
    return env_for(
        "http://127.0.0.1:9", sink, str(tmp_path / "state"), FORWARDER_QUARANTINE=quarantine, **extra
    )


def test_kept_listed_replayed_then_removed(bucket, hec, tmp_path):
    location = f"s3://{bucket}/dead-letters"
    quarantine = open_quarantine(location)
    quarantine.keep(STREAM, [refused(1), refused(2)])
    still = unplaceable(UNPLACEABLE, "no created_at")
    quarantine.keep(STREAM, [refused(3), still])
    settings = env(tmp_path, hec.url, location)

    listed = cli("quarantine", "list", env=settings)
    assert listed.returncode == 0, listed.stderr
    entries = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(e["event_id"] for e in entries) == sorted(
        [f"{n:064x}" for n in (1, 2, 3)] + [still.event.id]
    )
    assert {e["location"] for e in entries} == {f"s3://{bucket}/{key}" for key in objects(bucket)}
    assert len(objects(bucket)) == 2

    replayed = cli("quarantine", "replay", env=settings)
    assert replayed.returncode == 3, replayed.stderr  # the record that still cannot be placed stays
    outcome = json.loads(replayed.stdout)
    assert outcome["replayed"] == 3 and outcome["error"] is None
    assert [e["event_id"] for e in outcome["still_quarantined"]] == [still.event.id]
    assert sorted(hec.event_ids()) == [f"{n:064x}" for n in (1, 2, 3)]

    [left] = objects(bucket)  # the first object deleted, the second rewritten with what stays
    body = boto3.client("s3").get_object(Bucket=bucket, Key=left)["Body"].read()
    assert [json.loads(line)["event_id"] for line in body.splitlines()] == [still.event.id]
    again = cli("quarantine", "replay", env=settings)
    assert json.loads(again.stdout)["replayed"] == 0 and len(hec.event_ids()) == 3


@pytest.mark.parametrize("command", ["list", "replay"])
def test_a_missing_bucket_is_a_clear_failure(aws, hec, tmp_path, command):
    result = cli("quarantine", command, env=env(tmp_path, hec.url, "s3://no-such-bucket/q"))

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cannot list s3://no-such-bucket/q/" in result.stderr and "NoSuchBucket" in result.stderr


def test_an_entry_is_removed_by_the_location_quarantine_list_shows(bucket, tmp_path):
    location = f"s3://{bucket}/dead-letters"
    quarantine = open_quarantine(location)
    quarantine.keep(STREAM, [refused(1), refused(2)])
    listed = cli("quarantine", "list", "--id", f"{1:064x}", env=env(tmp_path, "http://127.0.0.1:9", location))
    [entry] = [json.loads(line) for line in listed.stdout.splitlines()]
    [key] = objects(bucket)
    assert entry["location"] == f"s3://{bucket}/{key}"

    quarantine.remove(entry["location"], {entry["event_id"]})
    assert [e.event_id for e in quarantine.entries()] == [f"{2:064x}"]
    quarantine.remove(key, {f"{2:064x}"})  # the bare key, as older callers pass it
    assert objects(bucket) == []


@pytest.mark.parametrize(
    "where",
    [
        "s3://another-bucket/dead-letters/year=2026/one.ndjson",
        "elsewhere/year=2026/one.ndjson",
        "s3://{bucket}/elsewhere/year=2026/one.ndjson",
        "s3://{bucket}/dead-letters/tenant-a/year=2026/one.ndjson",  # a tenant's quarantine nested inside
    ],
)
def test_a_location_outside_the_quarantine_is_refused_and_left_alone(bucket, where):
    where = where.format(bucket=bucket)
    boto3.client("s3").put_object(Bucket=bucket, Key="elsewhere/year=2026/one.ndjson", Body=b"{}\n")
    quarantine = open_quarantine(f"s3://{bucket}/dead-letters")

    with pytest.raises(StateError) as raised:
        quarantine.remove(where, {"x"})

    assert str(raised.value) == f"{where} is not in the quarantine s3://{bucket}/dead-letters"
    assert boto3.client("s3").list_objects_v2(Bucket=bucket)["KeyCount"] == 1


def test_an_object_another_replay_removed_meanwhile_is_nothing_to_remove(bucket):
    quarantine = open_quarantine(f"s3://{bucket}/dead-letters")
    quarantine.keep(STREAM, [refused(1)])
    [entry] = quarantine.entries()
    boto3.client("s3").delete_object(Bucket=bucket, Key=entry.where)

    quarantine.remove(entry.where, {entry.event_id})

    assert objects(bucket) == [] and list(quarantine.entries()) == []


# -- endpoints that do not answer as S3 does -------------------------------------------------------


def test_quarantine_list_ends_at_the_http_timeout(silent, tmp_path):
    outside = {k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_")}
    result = subprocess.run(
        [sys.executable, "-m", "forwarder", "quarantine", "list"],
        env={**outside, "FORWARDER_QUARANTINE": "s3://quiet/q", "FORWARDER_HTTP_TIMEOUT": "1"},
        capture_output=True,
        text=True,
        timeout=GUARD_S,
    )

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cannot list s3://quiet/q/: S3 ListObjectsV2: no complete response within 1 s" in result.stderr
    assert connections(silent) == 1  # cut at the deadline: botocore retried none


class FakeS3(BaseHTTPRequestHandler):
    """Lists one object, then sends its body a byte at a time (each byte well inside the read
    timeout); with ``endless``, every listing is empty and says there is more, under the same token."""

    protocol_version = "HTTP/1.1"
    endless = False

    def do_GET(self) -> None:
        if "list-type=2" in self.path:
            page = (
                "<KeyCount>0</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>again</NextContinuationToken>"
                if self.endless
                else "<KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>"
                "<Contents><Key>q/year=2026/one.ndjson</Key><Size>1000</Size></Contents>"
            )
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                f"<Name>slow</Name><Prefix>q/</Prefix><MaxKeys>1000</MaxKeys>{page}</ListBucketResult>"
            ).encode()
            self._headers(len(body), "application/xml")
            self.wfile.write(body)
            return
        self._headers(1000, "application/x-ndjson")
        for _ in range(1000):
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(0.3)

    def _headers(self, length: int, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type, monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    """boto3 pointed at a loopback server answering by (a fresh subclass of) ``handler``."""
    handler = type("Handler", (handler,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fake_s3(aws, monkeypatch) -> Iterator[type]:
    with serving(FakeS3, monkeypatch) as handler:
        yield handler


def test_a_trickled_object_body_ends_at_the_http_timeout(fake_s3):
    quarantine = S3Quarantine("s3://slow/q", client=aws.client("s3", 1))

    error = outcome_of(lambda: list(quarantine.entries()))

    assert isinstance(error, StateError), repr(error)
    assert (
        str(error) == "cannot read s3://slow/q/year=2026/one.ndjson: S3 GetObject: "
        "no complete response within 1 s (HTTP timeout)"
    )


def test_a_listing_that_never_ends_is_refused(fake_s3):
    fake_s3.endless = True
    quarantine = S3Quarantine("s3://slow/q", client=aws.client("s3", 5))

    error = outcome_of(lambda: [e.where for e in quarantine.entries()])

    assert isinstance(error, StateError) and "truncated listing without a new continuation token" in str(
        error
    )
