"""S3 sink: ``s3://bucket/prefix``. Each batch becomes one gzipped NDJSON object.

* Key. ``<prefix>/year=YYYY/month=MM/day=DD/<digest>.ndjson.gz``: the date (UTC) of the batch's newest
  event, Hive-style so Athena, Glue and Spark can prune partitions; the digest is a SHA-256 over the
  batch's sorted event ids, so a batch sent again after a crash overwrites its object instead of
  adding a copy. (A batch re-formed differently, say because late records arrived in between, gets
  another key: delivery is at least once, and every line carries its event id for deduplication.)
* Body. One event per line, JSON as it is, a text (CEF) event as its line; gzipped unless
  ``settings.gzip`` is off (then ``.ndjson``). ``Content-Type: application/x-ndjson`` with
  ``Content-Encoding: gzip``.
* Encryption. SSE-KMS with ``settings.sse_kms_key_id`` when set, else SSE-S3 (AES256) asked for
  explicitly, so a bucket policy that demands the header is satisfied.
* Failures. botocore retries throttling and 5xx itself (standard mode), all within the HTTP timeout
  (``aws.call``); what is left raises a SinkError, retryable only for throttling, 5xx and transport
  errors, the deadline included (not for a missing bucket).

boto3 is imported only when an AWS sink or the S3 quarantine is used.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Optional, Sequence

from .. import aws
from ..events import Event, SendResult
from ..retry import RetryPolicy
from .base import ndjson_line
from .settings import SinkSettings

DEFAULT_MAX_EVENTS = 5000
DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # before compression; larger objects suit data lakes better


def batch_digest(events: Sequence[Event]) -> str:
    """A SHA-256 over the events' sorted ids: the same events, in any order, name the same object."""
    return ids_digest(event.id for event in events)


def ids_digest(ids: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode("ascii")).hexdigest()


def object_key(prefix: str, events: Sequence[Event], suffix: str) -> str:
    return aws.s3_partition(prefix, max(event.time_us for event in events)) + batch_digest(events) + suffix


class S3Sink:
    name = "s3"

    def __init__(self, settings: SinkSettings, client: Any = None) -> None:
        self.bucket, self.prefix = aws.parse_s3_uri(settings.uri, "FORWARDER_SINK")
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        self.max_batch_bytes = settings.batch_bytes or DEFAULT_MAX_BYTES
        self.max_in_flight = 4  # concurrent requests are safe: each object's key comes from its ids
        self._gzip = settings.gzip
        self._kms_key_id = settings.sse_kms_key_id
        self._suffix = ".ndjson.gz" if settings.gzip else ".ndjson"
        self._client = client or aws.client("s3", settings.timeout_seconds, settings.max_attempts)

    def __repr__(self) -> str:
        return f"S3Sink(bucket={self.bucket!r}, prefix={self.prefix!r})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        if not batch:
            return SendResult.all_delivered(0)
        key = object_key(self.prefix, batch, self._suffix)
        lines = [ndjson_line(event) for event in batch]
        try:
            aws.put_s3_ndjson(self._client, self.bucket, key, lines, self._gzip, self._kms_key_id)
        except aws.failures() as exc:
            raise aws.sink_error(exc, f"writing s3://{self.bucket}/{key}") from exc
        return SendResult.all_delivered(len(batch))

    def probe(self) -> str:
        """HeadBucket: the bucket exists and these credentials reach it. A 403 does not prove that
        writing fails (HeadBucket needs s3:ListBucket, a batch only s3:PutObject), so it is said, not
        failed; a missing bucket is a failure."""
        where = f"bucket s3://{self.bucket}"
        if aws.probe_call(self._client, "head_bucket", "S3 HeadBucket", where, Bucket=self.bucket) is None:
            return (
                f"{where}: HeadBucket denied (these credentials may not list it); writing needs only "
                "s3:PutObject, which the first batch proves"
            )
        return f"{where}: exists and these credentials reach it (HeadBucket)"

    def close(self) -> None:
        pass


def validate(settings: SinkSettings) -> None:
    aws.parse_s3_uri(settings.uri, "FORWARDER_SINK")


def open_sink(settings: SinkSettings, retry_policy: Optional[RetryPolicy] = None) -> S3Sink:
    """boto3 tries again itself (aws.client's retries): ``retry_policy`` has nothing to pace here."""
    return S3Sink(settings)
