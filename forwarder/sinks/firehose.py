"""Amazon Data Firehose sink: ``firehose://delivery-stream-name`` (region and credentials from the
environment, as for every boto3 client).

* Records. One per event: its NDJSON line (``base.ndjson_line``), so an S3 destination receives
  NDJSON. A call carries at most 500 records and 4 MiB (PutRecordBatch's limits); a record over
  1,000 KiB is refused by Firehose whatever the batch, so it becomes a rejection without being sent.
* Partial failures. PutRecordBatch answers per record; only the records with an ``ErrorCode`` are
  sent again, with backoff, up to the retry policy's attempts; a ``ServiceUnavailableException`` for
  the whole call is retried alike. When the attempts run out the SinkError is retryable. Firehose
  does not deduplicate: delivery is at least once, and every record carries its event id.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import aws, retry
from ..errors import SinkError
from ..events import Event, SendResult
from ..logs import quoted
from .base import Bounds, ndjson_line, reject_oversized, split
from .settings import SinkSettings

MAX_RECORDS = 500
MAX_CALL_BYTES = 4 * 1024 * 1024
MAX_RECORD_BYTES = 1_000 * 1024


def _body(pair: Tuple[Event, bytes]) -> bytes:
    return pair[0].body


def stream_name(uri: str) -> str:
    name = uri[len("firehose://") :] if uri.lower().startswith("firehose://") else ""
    if not name or "/" in name or "?" in name:
        raise ValueError(
            f"FORWARDER_SINK for Firehose must look like firehose://delivery-stream (got {quoted(uri)})"
        )
    return name


def failed_positions(response: Dict[str, Any], count: int) -> List[int]:
    """Positions of the records PutRecordBatch did not prove stored: those with an ErrorCode or no
    RecordId; all of them when the answer is unreadable or its FailedPutCount disagrees."""
    answers = response.get("RequestResponses")
    failed_count = response.get("FailedPutCount")
    if not isinstance(answers, list) or len(answers) != count or not isinstance(failed_count, int):
        return list(range(count))
    failed = [
        n
        for n, answer in enumerate(answers)
        if not isinstance(answer, dict) or answer.get("ErrorCode") or not answer.get("RecordId")
    ]
    return failed if len(failed) >= failed_count else list(range(count))


class FirehoseSink:
    name = "firehose"

    def __init__(
        self, settings: SinkSettings, client: Any = None, retry_policy: Optional[retry.RetryPolicy] = None
    ) -> None:
        self.stream = stream_name(settings.uri)
        self.max_batch_events = min(settings.batch_events or MAX_RECORDS, MAX_RECORDS)
        self.max_batch_bytes = min(settings.batch_bytes or MAX_CALL_BYTES, MAX_CALL_BYTES)
        self.max_in_flight = 4  # concurrent requests are safe: each batch stands alone
        self._retry = retry_policy or retry.RetryPolicy(attempts=settings.max_attempts)
        # One boto3 try per call: the loop in _put makes the tries FORWARDER_MAX_ATTEMPTS allows.
        self._client = client or aws.client("firehose", settings.timeout_seconds, attempts=1)

    def __repr__(self) -> str:
        return f"FirehoseSink(stream={self.stream!r})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        kept, lines, rejected = reject_oversized(
            batch, ndjson_line, MAX_RECORD_BYTES, "Firehose record", "record limit"
        )
        bounds = Bounds(self.max_batch_events, self.max_batch_bytes)
        for chunk in split(zip(kept, lines), _body, bounds):  # the lines written once, above
            self._put([line for _, line in chunk])
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _put(self, lines: List[bytes]) -> None:
        """PutRecordBatch, then again with only the records reported failed, until none is left."""
        pending = list(lines)
        where = f"PutRecordBatch to Firehose stream {self.stream}"

        def attempt() -> None:
            records = [{"Data": line} for line in pending]
            try:
                response = aws.call(
                    self._client,
                    "put_record_batch",
                    "Firehose PutRecordBatch",
                    DeliveryStreamName=self.stream,
                    Records=records,
                )
            except aws.failures() as exc:
                error = aws.sink_error(exc, where)
                if not error.retryable:  # throttling, 5xx and transport errors are tried again
                    raise error from exc
                raise retry.TryAgain(str(error)) from exc
            pending[:] = [pending[n] for n in failed_positions(response, len(records))]
            if pending:
                raise retry.TryAgain(f"{len(pending)} record(s) reported failed")

        def give_up(failure: retry.Failure) -> None:
            raise SinkError(f"{where} after {failure.attempts} attempts: {failure.problem}", retryable=True)

        retry.call(self._retry, attempt, give_up, where)

    def probe(self) -> str:
        """DescribeDeliveryStream: the stream exists here and is ACTIVE (it takes records only then)."""
        where = f"Firehose stream {self.stream}"
        answer = aws.probe_call(
            self._client,
            "describe_delivery_stream",
            "Firehose DescribeDeliveryStream",
            where,
            DeliveryStreamName=self.stream,
        )
        if answer is None:
            return (
                f"{where}: DescribeDeliveryStream denied (these credentials may not describe it); writing "
                "needs only firehose:PutRecordBatch, which the first batch proves"
            )
        status = answer.get("DeliveryStreamDescription", {}).get("DeliveryStreamStatus")
        if status != "ACTIVE":
            raise SinkError(f"{where} is {status}, not ACTIVE: it takes no records until it is")
        return f"{where}: ACTIVE (DescribeDeliveryStream)"

    def close(self) -> None:
        pass


def validate(settings: SinkSettings) -> None:
    stream_name(settings.uri)


def open_sink(settings: SinkSettings, retry_policy: Optional[retry.RetryPolicy] = None) -> FirehoseSink:
    return FirehoseSink(settings, retry_policy=retry_policy)
