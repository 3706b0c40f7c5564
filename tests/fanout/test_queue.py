"""The work queue counts an item as queued only when SQS lists it among what it sent: a 200 that
names no entry (a proxy, a broken endpoint) queued nothing, and the caller must retry."""

from __future__ import annotations

import json
from typing import Any, Dict

import boto3
import pytest

from forwarder.fanout.queue import QueueError, WorkQueue
from forwarder.fanout.workitem import WorkItem
from tests.receivers.http_collector import LoopbackReceiver, Reply, json_reply


class SqsEndpoint(LoopbackReceiver):
    """SendMessageBatch over SQS's JSON protocol; ``acknowledge`` decides which entries it lists."""

    name = "sqs-endpoint"

    def __init__(self, acknowledge: bool) -> None:
        super().__init__()
        self.acknowledge = acknowledge

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        entries = json.loads(raw)["Entries"]
        listed: Dict[str, Any] = {}
        if self.acknowledge:
            listed["Successful"] = [
                {"Id": e["Id"], "MessageId": f"m{e['Id']}", "MD5OfMessageBody": "0" * 32} for e in entries
            ]
        return 200, json_reply(200, listed)[1], {"Content-Type": "application/x-amz-json-1.0"}


def _queue(endpoint: SqsEndpoint) -> WorkQueue:
    client = boto3.client(
        "sqs",
        endpoint_url=endpoint.http_url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    return WorkQueue(endpoint.http_url + "/123456789012/work.fifo", client)


ITEMS = [WorkItem("acme", "c1", shard, (f"user/u{shard}@acme.example",), (), ()) for shard in range(3)]


def test_items_sqs_lists_as_sent_are_queued():
    with SqsEndpoint(acknowledge=True) as endpoint:
        _queue(endpoint).send(ITEMS)


def test_a_reply_that_lists_no_entry_queued_nothing():
    with SqsEndpoint(acknowledge=False) as endpoint, pytest.raises(QueueError, match="3 work item"):
        _queue(endpoint).send(ITEMS)
