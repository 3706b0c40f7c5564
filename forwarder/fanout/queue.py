"""The work queue: an SQS FIFO queue, one message group per tenant.

SQS itself then hands a tenant's items to one worker at a time, in order, while tenants run in
parallel. The deduplication id is the item's own (``WorkItem.id``): a planner or worker that sends
the same item twice within five minutes (a retry after a timeout) adds it once.

Every SendMessageBatch goes through ``aws.call``: ``FORWARDER_HTTP_TIMEOUT`` bounds it whole (botocore's
retries included) and a stop request ends it; a failure is a QueueError naming the queue.
"""

from __future__ import annotations

from typing import Any, List, Sequence

from ..errors import ForwarderError
from .workitem import WorkItem

_BATCH = 10  # SendMessageBatch's limit


class QueueError(ForwarderError):
    """Work items could not be queued."""


class WorkQueue:
    def __init__(self, url: str, client: Any = None, timeout_seconds: float = 60.0) -> None:
        from .. import aws  # boto3 only where a queue is used

        self.url = url
        self._client = client or aws.client("sqs", timeout_seconds)

    def send(self, items: Sequence[WorkItem]) -> None:
        """Queue every item; QueueError naming how many were not queued (botocore already retried), or
        the queue and what went wrong when a batch got no answer within the deadline."""
        from .. import aws

        failed: List[str] = []
        for start in range(0, len(items), _BATCH):
            chunk = items[start : start + _BATCH]
            entries = [
                {
                    "Id": str(i),
                    "MessageBody": item.to_body(),
                    "MessageGroupId": item.tenant,
                    "MessageDeduplicationId": item.id,
                }
                for i, item in enumerate(chunk)
            ]
            try:
                response = aws.call(
                    self._client,
                    "send_message_batch",
                    "SQS SendMessageBatch",
                    QueueUrl=self.url,
                    Entries=entries,
                )
            except aws.failures() as exc:
                raise QueueError(f"cannot queue work on {self.url}: {aws.reason(exc)}") from None
            failed.extend(f"{e.get('Code', '?')}" for e in response.get("Failed", []))
            # A reply that lists an entry neither as sent nor as failed did not queue it either.
            answered = {e.get("Id") for e in response.get("Successful", []) + response.get("Failed", [])}
            failed.extend("not acknowledged" for e in entries if e["Id"] not in answered)
        if failed:
            raise QueueError(
                f"{len(failed)} work item(s) not queued on {self.url}: {', '.join(sorted(set(failed)))}"
            )
