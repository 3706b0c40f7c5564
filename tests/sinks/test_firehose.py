"""The Firehose sink: records landing in S3 through moto's delivery stream, and partial failures
from a loopback endpoint speaking PutRecordBatch's JSON protocol (moto never fails a record)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Dict, List

import boto3
import pytest

from forwarder import retry
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.sinks import open_sink
from forwarder.sinks.firehose import MAX_RECORD_BYTES, FirehoseSink, stream_name
from forwarder.sinks.settings import SinkSettings
from tests.receivers.http_collector import LoopbackReceiver, Reply, json_reply
from tests.sinks.helpers import firehose_into_bucket, only_rejection


def event(n: int, pad: str = "") -> Event:
    event_id = hashlib.sha256(f"fh {n}".encode()).hexdigest()
    return Event(event_id, 0, json.dumps({"event": {"id": event_id}, "pad": pad}).encode())


def test_records_land_in_the_s3_destination(aws):
    firehose_into_bucket("audit", "fh-dest")
    events = [event(n) for n in range(7)]

    result = open_sink(SinkSettings(uri="firehose://audit", batch_events=3)).send(events)

    assert (result.delivered, result.rejected) == (7, [])
    s3 = boto3.client("s3")
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket="fh-dest")["Contents"]]
    lines = b"".join(s3.get_object(Bucket="fh-dest", Key=k)["Body"].read() for k in keys).splitlines()
    assert sorted(lines) == sorted(e.body for e in events)
    assert len(keys) == 3  # one object per PutRecordBatch call in moto


def test_an_unknown_stream_raises_not_retryable(aws):
    with pytest.raises(SinkError) as caught:
        FirehoseSink(SinkSettings(uri="firehose://missing")).send([event(1)])
    assert not caught.value.retryable and "missing" in str(caught.value)


class FlakyFirehose(LoopbackReceiver):
    """PutRecordBatch over awsJson1.1; records whose data holds a marker fail ``failures`` times."""

    name = "flaky-firehose"

    def __init__(self, failures: Dict[str, int], lie: bool = False) -> None:
        super().__init__()
        self.lie = lie  # a proxy's 200 {} : no per-record answer, no FailedPutCount
        self.failures = dict(failures)
        self.calls: List[List[bytes]] = []
        self.stored: List[bytes] = []

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        assert headers["x-amz-target"] == "Firehose_20150804.PutRecordBatch"
        records = [base64.b64decode(r["Data"]) for r in json.loads(raw)["Records"]]
        self.calls.append(records)
        if self.lie:
            return 200, b"{}", {"Content-Type": "application/x-amz-json-1.1"}
        answers = []
        for data in records:
            marker = next((m for m, left in self.failures.items() if left > 0 and m.encode() in data), None)
            if marker:
                self.failures[marker] -= 1
                answers.append({"ErrorCode": "ServiceUnavailableException", "ErrorMessage": "Slow down."})
            else:
                self.stored.append(data)
                answers.append({"RecordId": f"r{len(self.stored)}"})
        failed = sum("ErrorCode" in a for a in answers)
        reply = {"FailedPutCount": failed, "Encrypted": False, "RequestResponses": answers}
        return 200, json_reply(200, reply)[1], {"Content-Type": "application/x-amz-json-1.1"}


@pytest.fixture
def flaky(aws, monkeypatch):
    def start(failures: Dict[str, int], lie: bool = False) -> FlakyFirehose:
        server = FlakyFirehose(failures, lie).__enter__()
        started.append(server)
        monkeypatch.setenv("AWS_ENDPOINT_URL_FIREHOSE", server.http_url)
        return server

    started: List[FlakyFirehose] = []
    yield start
    for server in started:
        server.__exit__()


def test_only_the_failed_records_are_sent_again(flaky, waits):
    events = [event(n) for n in range(5)]
    server = flaky({events[1].id: 2, events[3].id: 1})

    result = FirehoseSink(
        SinkSettings(uri="firehose://audit"), retry_policy=retry.RetryPolicy(sleep=waits)
    ).send(events)

    assert result.delivered == 5
    assert [len(call) for call in server.calls] == [5, 2, 1]
    assert server.calls[2] == [events[1].body + b"\n"]
    assert sorted(server.stored) == sorted(e.body + b"\n" for e in events)
    assert len(waits) == 2


def test_records_failing_past_the_attempts_raise_retryable(flaky, waits):
    events = [event(n) for n in range(3)]
    flaky({events[0].id: 100})
    sink = FirehoseSink(
        SinkSettings(uri="firehose://audit"), retry_policy=retry.RetryPolicy(attempts=3, sleep=waits)
    )

    with pytest.raises(SinkError) as caught:
        sink.send(events)

    assert caught.value.retryable and "1 record(s)" in str(caught.value)
    assert len(waits) == 2


def test_an_answer_without_per_record_proof_delivers_nothing(flaky, waits):
    server = flaky({}, lie=True)
    sink = FirehoseSink(
        SinkSettings(uri="firehose://audit"), retry_policy=retry.RetryPolicy(attempts=2, sleep=waits)
    )
    with pytest.raises(SinkError, match="2 record\\(s\\) reported failed") as caught:
        sink.send([event(1), event(2)])
    assert caught.value.retryable and [len(call) for call in server.calls] == [2, 2]


def test_limits_and_oversized_records(flaky, waits):
    server = flaky({})
    big = event(9, pad="x" * MAX_RECORD_BYTES)
    sink = FirehoseSink(
        SinkSettings(uri="firehose://audit", batch_events=10_000), retry_policy=retry.RetryPolicy(sleep=waits)
    )

    result = sink.send([event(1), big, event(2)])

    assert sink.max_batch_events == 500 and sink.max_batch_bytes == 4 * 1024 * 1024
    assert "Firehose record" in only_rejection(result, big, delivered=2).reason
    assert len(server.stored) == 2


@pytest.mark.parametrize("uri", ["firehose://", "firehose://a/b", "kinesis://a"])
def test_bad_uris(uri):
    with pytest.raises(ValueError, match="firehose://"):
        stream_name(uri)


def test_a_raw_line_break_in_a_body_cannot_split_its_record(flaky):
    pretty = Event("p" * 64, 0, b'{"a":\n"x"}')
    text = Event("t" * 64, 0, b"CEF:0|V|P|1|a|b|3|msg=one\r\ntwo", is_json=False)
    server = flaky({})

    assert FirehoseSink(SinkSettings(uri="firehose://audit")).send([pretty, text]).delivered == 2

    assert server.stored == [b'{"a": "x"}\n', b"CEF:0|V|P|1|a|b|3|msg=one\\r\\ntwo\n"]
