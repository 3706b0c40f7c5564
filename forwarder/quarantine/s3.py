"""The quarantine under ``s3://bucket/prefix`` (Lambda, whose disk does not outlive the invocation).

Every call to S3 goes through ``aws.call`` / ``aws.read_object``: ``FORWARDER_HTTP_TIMEOUT`` bounds it
whole (retries and the body's read included) and a stop request ends it. Writing is part of a run: a
failure is a SinkError, so the batch is not committed and is retried. Reading and removing serve
``quarantine list`` / ``replay``: a failure is a StateError naming the object as ``s3://bucket/key``,
the form an entry's ``where`` takes.

Removing rewrites (or deletes) an object only if it is still the version read (``If-Match`` its
ETag): another replay, or a run keeping the same rejections again after a crash, may have replaced
it meanwhile, and an unconditional write would then drop what they wrote or bring back what they
removed.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any, Iterator, List, Optional, Sequence, Set, Tuple, Type

from .. import aws
from ..errors import SinkError, StateError
from ..events import Rejection
from ..timeutil import now_us
from .entries import Entry, quarantine_lines, read_entries, without
from .place import QuarantinePlace

# Reads and conditional writes per remove: each lost race means another writer's change landed, so
# more than a few in a row is an object being rewritten without pause; the next replay tries again.
ATTEMPTS = 5


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
            raise aws.sink_error(exc, f"quarantining {len(rejections)} event(s) to {self._uri(key)}") from exc

    def entries(self) -> Iterator[Entry]:
        for key in self._keys():
            read = self._read(key)
            if read is not None:
                yield from read_entries(read[0], self._uri(key))

    def remove(self, where: str, event_ids: Set[str]) -> None:
        """Drop these entries from ``where`` (``s3://bucket/key``, or the bare key) by a write
        conditional on the version read; a lost race is read again and the removal applied to what
        is there now, up to ATTEMPTS times, then a StateError (the entries stay, nothing is lost)."""
        key = self._key_of(where)
        for _ in range(ATTEMPTS):
            read = self._read(key)
            if read is None:
                return  # gone: another replay removed it
            body, etag = read
            if not etag:
                raise StateError(f"cannot rewrite {self._uri(key)}: S3 answered GetObject without an ETag")
            kept = without(body, event_ids)
            if len(kept) == len(body.splitlines()):
                return  # none of these entries is there (any more)
            if self._replaced(key, kept, etag):
                return
        raise StateError(
            f"cannot remove {len(event_ids)} replayed entries from {self._uri(key)}: it changed "
            f"concurrently on each of {ATTEMPTS} tries (another replay or a run writing it); "
            "they stay quarantined until a later replay"
        )

    def _replaced(self, key: str, kept: List[bytes], etag: str) -> bool:
        """Rewrite ``key`` with ``kept`` (delete it when empty) if it is still version ``etag``;
        False when it is not (changed or gone since read)."""
        with self._failing_as("rewrite" if kept else "delete", key):
            try:
                if kept:
                    aws.put_s3_ndjson(
                        self._client, self.bucket, key, kept, False, self._kms_key_id, if_match=etag
                    )
                else:
                    aws.call(
                        self._client,
                        "delete_object",
                        "S3 DeleteObject",
                        Bucket=self.bucket,
                        Key=key,
                        IfMatch=etag,
                    )
            except aws.failures() as exc:
                if aws.error_code(exc) not in aws.CONFLICT_CODES:
                    raise
                return False
        return True

    def _read(self, key: str) -> Optional[Tuple[bytes, str]]:
        """The object's body and ETag; None once it is gone (another replay removed it since it
        was listed)."""
        with self._failing_as("read", key):
            try:
                return aws.read_object(self._client, self.bucket, key, "S3 GetObject")
            except aws.failures() as exc:
                if aws.error_code(exc) not in ("NoSuchKey", "404"):
                    raise
        return None

    def _key_of(self, where: str) -> str:
        """The key of an entry's ``where``: ``s3://bucket/key`` (what entries and listings show) or
        the bare key; a location outside this quarantine is refused, never touched."""
        uri = self._uri("")
        key = where[len(uri) :] if where.startswith(uri) else where
        if "://" in key or not key.startswith(f"{self._inside()}year="):  # as _keys lists them
            raise StateError(f"{where} is not in the quarantine {self.location}")
        return key

    def _inside(self) -> str:
        """What every key under the prefix starts with."""
        return f"{self.prefix}/" if self.prefix else ""

    def _uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def _keys(self) -> Iterator[str]:
        """Every object under the prefix, page by page (a listing that never ends is refused)."""
        prefix = self._inside()
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
            raise StateError(f"cannot {action} {self._uri(key)}: {exc}") from None


def open_at(place: QuarantinePlace) -> S3Quarantine:
    return S3Quarantine(place.location, place.kms_key_id, timeout_seconds=place.timeout_seconds)
