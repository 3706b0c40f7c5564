"""The S3 sink against the moto server over loopback HTTP."""

from __future__ import annotations

import gzip
import hashlib
import json

import boto3
import pytest

from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.sinks import open_sink
from forwarder.sinks.s3 import S3Sink, object_key
from forwarder.sinks.settings import SinkSettings
from forwarder.timeutil import parse_iso
from tests.sinks.helpers import NoEtag

DAY1 = parse_iso("2026-01-02T23:59:59.999999Z")
DAY2 = parse_iso("2026-01-03T00:00:00Z")


def event(n: int, time_us: int = DAY1) -> Event:
    event_id = hashlib.sha256(f"s3 {n}".encode()).hexdigest()
    return Event(event_id, time_us, json.dumps({"event": {"id": event_id}, "message": f"nº{n}"}).encode())


@pytest.fixture
def s3(aws):
    client = boto3.client("s3")
    client.create_bucket(Bucket="audit-lake")
    return client


def objects(client, prefix=""):
    listed = client.list_objects_v2(Bucket="audit-lake", Prefix=prefix).get("Contents", [])
    return sorted(item["Key"] for item in listed)


def read(client, key):
    body = client.get_object(Bucket="audit-lake", Key=key)["Body"].read()
    return gzip.decompress(body) if key.endswith(".gz") else body


def test_a_batch_becomes_one_gzipped_ndjson_object_under_the_newest_events_day(s3):
    events = [event(1, DAY1), event(2, DAY2), event(3, DAY1)]

    result = open_sink(SinkSettings(uri="s3://audit-lake/emailauth/audit/")).send(events)

    assert result.delivered == 3
    (key,) = objects(s3)
    assert key.startswith("emailauth/audit/year=2026/month=01/day=03/") and key.endswith(".ndjson.gz")
    assert read(s3, key).split(b"\n") == [e.body for e in events] + [b""]
    head = s3.head_object(Bucket="audit-lake", Key=key)
    assert head["ServerSideEncryption"] == "AES256"
    assert head["ContentEncoding"] == "gzip" and head["ContentType"] == "application/x-ndjson"


def test_a_resent_batch_overwrites_its_object(s3):
    sink = S3Sink(SinkSettings(uri="s3://audit-lake/p"))
    events = [event(n) for n in range(5)]

    sink.send(events)
    sink.send(list(reversed(events)))  # the same ids in another order: the same key
    sink.send(events[:2])

    assert len(objects(s3)) == 2
    assert object_key("p", events, ".x") == object_key("p", events[::-1], ".x")
    assert object_key("p", events, ".x") != object_key("p", events[:2], ".x")


def test_kms_encryption_and_plain_bodies(s3):
    key_id = boto3.client("kms").create_key()["KeyMetadata"]["KeyId"]
    sink = S3Sink(SinkSettings(uri="s3://audit-lake", sse_kms_key_id=key_id, gzip=False))

    sink.send([event(1)])

    (key,) = objects(s3)
    assert key.startswith("year=2026/month=01/day=02/") and key.endswith(".ndjson")
    assert read(s3, key) == event(1).body + b"\n"
    head = s3.head_object(Bucket="audit-lake", Key=key)
    assert head["ServerSideEncryption"] == "aws:kms" and key_id in head["SSEKMSKeyId"]


def test_a_missing_bucket_raises_not_retryable(s3):
    with pytest.raises(SinkError) as caught:
        S3Sink(SinkSettings(uri="s3://no-such-bucket/x")).send([event(1)])

    assert not caught.value.retryable and "no-such-bucket" in str(caught.value)


@pytest.mark.parametrize("uri", ["s3://", "s3:///prefix", "s3://bucket/p?x=1"])
def test_bad_uris_are_refused(uri):
    with pytest.raises(ValueError, match="FORWARDER_SINK"):
        S3Sink(SinkSettings(uri=uri), client=object())


def test_a_put_answered_without_an_etag_is_not_delivered(aws, monkeypatch):
    """Something in front of S3 (a proxy, a misconfigured endpoint) answers 200 with no ETag."""
    with NoEtag() as fake:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", fake.http_url)
        with pytest.raises(SinkError, match="without an ETag") as caught:
            S3Sink(SinkSettings(uri="s3://audit-lake/p")).send([event(1)])
    assert caught.value.retryable


def test_a_raw_line_break_in_a_body_cannot_split_its_line(s3):
    pretty = Event("p" * 64, DAY1, b'{"a":\n"x"}')
    text = Event("t" * 64, DAY1, b"CEF:0|V|P|1|a|b|3|msg=one\r\ntwo", is_json=False)

    S3Sink(SinkSettings(uri="s3://audit-lake", gzip=False)).send([pretty, text])

    (key,) = objects(s3)
    assert read(s3, key) == b'{"a": "x"}\nCEF:0|V|P|1|a|b|3|msg=one\\r\\ntwo\n'
