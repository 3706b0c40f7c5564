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

import gzip
import hashlib
from typing import Any, Dict, Optional, Sequence

from .. import aws
from ..errors import SinkError
from ..events import Event, SendResult
from ..timeutil import from_us
from .settings import SinkSettings

DEFAULT_MAX_EVENTS = 5000
DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # before compression; larger objects suit data lakes better
_THROTTLED = frozenset(
    {"Throttling", "ThrottlingException", "SlowDown", "RequestTimeout", "RequestLimitExceeded"}
)


def aws_error(exc: Exception, doing: str) -> SinkError:
    """A SinkError from a boto3 failure: retryable for throttling, 5xx and transport errors only."""
    response = getattr(exc, "response", None)
    if not response:  # no answer at all: a connection or timeout error
        return SinkError(f"{doing} failed: {exc}", retryable=True)
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    code = aws.error_code(exc)
    return SinkError(f"{doing} failed: {exc}", retryable=status >= 500 or status == 429 or code in _THROTTLED)


def partition(prefix: str, time_us: int) -> str:
    day = from_us(time_us)
    path = f"year={day.year:04d}/month={day.month:02d}/day={day.day:02d}/"
    return f"{prefix}/{path}" if prefix else path


def object_key(prefix: str, events: Sequence[Event], suffix: str) -> str:
    digest = hashlib.sha256("\n".join(sorted(event.id for event in events)).encode("ascii")).hexdigest()
    return partition(prefix, max(event.time_us for event in events)) + digest + suffix


def put_ndjson(
    client: Any, bucket: str, key: str, lines: Sequence[bytes], compress: bool, kms_key_id: Optional[str]
) -> None:
    """PUT the lines as one object, encrypted at rest; ``compress`` gzips the body. Only an answer
    with an ETag counts as stored (a proxy's empty 200 does not)."""
    body = b"".join(lines)
    extra: Dict[str, str] = {"ContentType": "application/x-ndjson"}
    if compress:
        body = gzip.compress(body, compresslevel=6, mtime=0)
        extra["ContentEncoding"] = "gzip"
    if kms_key_id:
        extra.update(ServerSideEncryption="aws:kms", SSEKMSKeyId=kms_key_id)
    else:
        extra["ServerSideEncryption"] = "AES256"
    reply = aws.call(client, "put_object", "S3 PutObject", Bucket=bucket, Key=key, Body=body, **extra)
    if not (isinstance(reply, dict) and reply.get("ETag")):  # S3's proof that it stored the object
        raise SinkError(f"S3 answered the PUT of s3://{bucket}/{key} without an ETag", retryable=True)


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
        self._client = client or aws.client("s3", settings.timeout_seconds)

    def __repr__(self) -> str:
        return f"S3Sink(bucket={self.bucket!r}, prefix={self.prefix!r})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        if not batch:
            return SendResult.all_delivered(0)
        key = object_key(self.prefix, batch, self._suffix)
        lines = [event.body + b"\n" for event in batch]
        try:
            put_ndjson(self._client, self.bucket, key, lines, self._gzip, self._kms_key_id)
        except aws.failures() as exc:
            raise aws_error(exc, f"writing s3://{self.bucket}/{key}") from exc
        return SendResult.all_delivered(len(batch))

    def close(self) -> None:
        pass


def validate(settings: SinkSettings) -> None:
    aws.parse_s3_uri(settings.uri, "FORWARDER_SINK")


def open_s3(settings: SinkSettings) -> S3Sink:
    return S3Sink(settings)
