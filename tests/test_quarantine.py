"""Quarantine: a local directory and an S3 prefix (moto server), chosen by open_quarantine."""

from __future__ import annotations

import json

import boto3
import pytest

from forwarder.errors import SinkError, StateError
from forwarder.events import Event, Rejection
from forwarder.quarantine import LocalQuarantine, open_quarantine
from forwarder.quarantine.s3 import S3Quarantine

STREAM = "user:alice@example.com"


def rejection(n: int, reason: str = "mapping error: [event] of type [keyword]") -> Rejection:
    event = Event(f"{n:064x}", 0, json.dumps({"event": {"id": f"{n:064x}"}, "m": "é"}).encode())
    return Rejection(event, reason)


def kept(lines: bytes) -> list[dict]:
    return [json.loads(line) for line in lines.splitlines()]


def test_local_quarantine_appends_each_event_with_its_reason(tmp_path):
    quarantine = open_quarantine(str(tmp_path / "q"))
    assert isinstance(quarantine, LocalQuarantine)

    quarantine.keep(STREAM, [rejection(1), rejection(2, "too large")])
    quarantine.keep(STREAM, [])
    quarantine.keep("domain:example.com", [rejection(3)])

    entries = kept((tmp_path / "q" / "quarantine.ndjson").read_bytes())
    assert [(e["stream"], e["event_id"], e["reason"]) for e in entries] == [
        (STREAM, f"{1:064x}", "mapping error: [event] of type [keyword]"),
        (STREAM, f"{2:064x}", "too large"),
        ("domain:example.com", f"{3:064x}", "mapping error: [event] of type [keyword]"),
    ]
    assert json.loads(entries[0]["event"])["m"] == "é"


def test_a_line_torn_by_a_killed_writer_neither_hides_the_others_nor_swallows_the_next(tmp_path):
    quarantine = open_quarantine(str(tmp_path / "q"))
    quarantine.keep(STREAM, [rejection(1)])
    path = tmp_path / "q" / "quarantine.ndjson"
    with open(path, "ab") as fh:
        fh.write(b'{"stream": "user:bob@example.com", "event_id": "00')  # killed mid-line
    quarantine.keep(STREAM, [rejection(2)])

    assert [e.doc["event_id"] for e in quarantine.entries()] == [f"{1:064x}", f"{2:064x}"]


def test_a_quarantine_that_cannot_be_written_says_which_file(tmp_path):
    (tmp_path / "q").write_text("a file where the directory should be")
    quarantine = open_quarantine(str(tmp_path / "q"))
    with pytest.raises(StateError, match="quarantine"):
        quarantine.keep(STREAM, [rejection(1)])


def test_file_uri_is_a_local_directory(tmp_path):
    quarantine = open_quarantine(f"file://{tmp_path}")
    assert quarantine.location == str(tmp_path / "quarantine.ndjson")


@pytest.fixture
def bucket(aws):
    client = boto3.client("s3")
    client.create_bucket(Bucket="dead-letters")
    return client


def objects(client):
    return sorted(item["Key"] for item in client.list_objects_v2(Bucket="dead-letters").get("Contents", []))


def test_s3_quarantine_keeps_one_object_per_call_and_overwrites_a_repeat(bucket):
    quarantine = open_quarantine("s3://dead-letters/forwarder/quarantine/")
    assert isinstance(quarantine, S3Quarantine)

    quarantine.keep(STREAM, [rejection(1), rejection(2)])
    quarantine.keep(STREAM, [rejection(2), rejection(1)])  # the batch re-sent after a crash
    quarantine.keep(STREAM, [rejection(3)])
    quarantine.keep(STREAM, [])

    keys = objects(bucket)
    assert len(keys) == 2
    assert all(k.startswith("forwarder/quarantine/year=") and "/day=" in k for k in keys)
    entries = [e for k in keys for e in kept(bucket.get_object(Bucket="dead-letters", Key=k)["Body"].read())]
    assert sorted(e["event_id"] for e in entries) == [f"{n:064x}" for n in (1, 2, 3)]
    assert {e["reason"] for e in entries} == {"mapping error: [event] of type [keyword]"}
    head = bucket.head_object(Bucket="dead-letters", Key=keys[0])
    assert head["ServerSideEncryption"] == "AES256"


def test_s3_quarantine_failure_raises_so_the_batch_is_not_committed(aws):
    quarantine = open_quarantine("s3://no-such-bucket/q")

    with pytest.raises(SinkError, match="quarantining 1 event"):
        quarantine.keep(STREAM, [rejection(1)])


def test_an_empty_location_is_refused():
    with pytest.raises(ValueError, match="FORWARDER_QUARANTINE"):
        open_quarantine("")


def test_an_unknown_scheme_is_refused_rather_than_taken_for_a_directory():
    with pytest.raises(ValueError, match="FORWARDER_QUARANTINE: unknown scheme 'gs'"):
        open_quarantine("gs://bucket/prefix")


def test_an_s3_quarantine_never_reads_a_tenants_quarantine_nested_inside_it(bucket):
    # A tenant with state_namespace "" keeps the base location; every other tenant's lies inside it.
    base = open_quarantine("s3://dead-letters/q")
    acme = open_quarantine("s3://dead-letters/q/tenant/acme")
    base.keep(STREAM, [rejection(1)])
    acme.keep(STREAM, [rejection(2)])
    assert [e.event_id for e in base.entries()] == [f"{1:064x}"]
    assert [e.event_id for e in acme.entries()] == [f"{2:064x}"]
