"""The quarantine under ``s3://bucket/prefix`` (Lambda, whose disk does not outlive the invocation).

Every call to S3 goes through ``aws.call`` / ``aws.read_object``: ``FORWARDER_HTTP_TIMEOUT`` bounds it
whole (retries and the body's read included) and a stop request ends it. Writing is part of a run: a
failure is a SinkError, so the batch is not committed and is retried. Reading and removing serve
``quarantine list`` / ``replay``: a failure is a StateError naming the bucket and key.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any, Iterator, Optional, Sequence, Set, Tuple, Type

from .. import aws
from ..errors import SinkError, StateError
from ..events import Rejection
from ..timeutil import now_us
from .entries import Entry, quarantine_lines, read_entries, without


class S3Quarantine:
    """One NDJSON object per call under ``<prefix>/year=/month=/day=/`` of the day it was kept.

    The key is a digest of the stream and the event ids, so the same rejections kept again after a
    crash (the batch is re-sent, the sink refuses it again) replace their object rather than add one.
    """

    def __init__(
        self,
        location: str,
        kms_key_id: Optional[str] = None,
        client: Any = None,
        timeout_seconds: float = 60.0,
    ) -> None:
        self.bucket, self.prefix = aws.parse_s3_uri(location, "FORWARDER_QUARANTINE")
        self.location = location
        self._kms_key_id = kms_key_id
        self._client = client or aws.client("s3", timeout_seconds)

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None:
        if not rejections:
            return
        at_us = now_us()
        names = "\n".join([stream_key, *sorted(r.event.id for r in rejections)])
        key = (
            aws.s3_partition(self.prefix, at_us)
            + hashlib.sha256(names.encode("utf-8")).hexdigest()
            + ".ndjson"
        )
        lines = quarantine_lines(stream_key, rejections, at_us)
        try:
            aws.put_s3_ndjson(self._client, self.bucket, key, lines, False, self._kms_key_id)
        except aws.failures() as exc:
            raise aws.sink_error(
                exc, f"quarantining {len(rejections)} event(s) to s3://{self.bucket}/{key}"
            ) from exc

    def entries(self) -> Iterator[Entry]:
        for key in self._keys():
            body = self._body(key)
            if body is not None:
                yield from read_entries(body, key)

    def remove(self, where: str, event_ids: Set[str]) -> None:
        body = self._body(where)
        if body is None:
            return
        kept = without(body, event_ids)
        with self._failing_as("rewrite" if kept else "delete", where):
            if kept:
                aws.put_s3_ndjson(self._client, self.bucket, where, kept, False, self._kms_key_id)
            else:
                aws.call(self._client, "delete_object", "S3 DeleteObject", Bucket=self.bucket, Key=where)

    def _body(self, key: str) -> Optional[bytes]:
        """The object's body; None once it is gone (another replay removed it since it was listed)."""
        with self._failing_as("read", key):
            try:
                return aws.read_object(self._client, self.bucket, key, "S3 GetObject")[0]
            except aws.failures() as exc:
                if aws.error_code(exc) not in ("NoSuchKey", "404"):
                    raise
        return None

    def _keys(self) -> Iterator[str]:
        """Every object under the prefix, page by page (a listing that never ends is refused)."""
        prefix = f"{self.prefix}/" if self.prefix else ""
        with self._failing_as("list", prefix):
            for key in aws.s3_keys(self._client, self.bucket, prefix):
                if key[len(prefix) :].startswith("year="):  # else a tenant's quarantine nested inside
                    yield key

    @contextlib.contextmanager
    def _failing_as(self, action: str, key: str) -> Iterator[None]:
        """A boto3 failure (the deadline's included) or a PUT without proof of storage (SinkError)
        as a StateError saying what could not be done where; a stop request passes as it is."""
        caught: Tuple[Type[Exception], ...] = (*aws.failures(), SinkError)
        try:
            yield
        except caught as exc:
            raise StateError(f"cannot {action} s3://{self.bucket}/{key}: {exc}") from None


def open_at(location: str, kms_key_id: Optional[str], timeout_seconds: float) -> S3Quarantine:
    return S3Quarantine(location, kms_key_id, timeout_seconds=timeout_seconds)
