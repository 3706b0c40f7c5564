"""A loopback stand-in for S3 PutObject and Firehose PutRecordBatch, so the boto3 sinks can meet the
receiver faults (``trickle_next``: the answer a byte at a time) that moto cannot stage.

Every request is stored and answered with the service's proof of storage: an ``ETag`` for a PUT (with
a short XML body, as a proxy might add, so there is something to trickle), a ``RecordId`` per record
for PutRecordBatch.
"""

from __future__ import annotations

import json
from typing import Dict, List

from .http_collector import LoopbackReceiver, Reply, json_reply

S3_REPLY = b'<?xml version="1.0" encoding="UTF-8"?>\n<PutObjectResult></PutObjectResult>'


class AwsEndpoint(LoopbackReceiver):
    name = "aws-endpoint"

    def __init__(self) -> None:
        super().__init__()
        self.stored: List[bytes] = []  # object bodies and record batches, as they arrived

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        with self.lock:
            self.stored.append(raw)
        if method == "PUT":
            return 200, S3_REPLY, {"ETag": '"0123456789abcdef"', "Content-Type": "application/xml"}
        count = len(json.loads(raw)["Records"])
        reply = {"FailedPutCount": 0, "RequestResponses": [{"RecordId": f"r{n}"} for n in range(count)]}
        return 200, json_reply(200, reply)[1], {"Content-Type": "application/x-amz-json-1.1"}
