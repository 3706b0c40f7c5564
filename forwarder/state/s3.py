"""State in an S3 bucket: one JSON object per stream, replaced by conditional writes.

Layout under ``s3://bucket/prefix``:

* ``streams/<percent-encoded key>.json`` - one stream's state; ``keys()`` lists only these. A key
  that would make the object key pass S3's 1,024 bytes is cut and gets ``…<hash>`` (``names.bounded``);
  ``keys()`` reads such a stream's key from its document.
* ``lease.json`` - the run lease; deleting it by hand breaks a lease whose run is known to be gone.
* ``scheduler`` - what the scheduler remembers between runs (``forwarder.scheduling``); also
  ``fanout-cycle``, the fan-out planner's cycle marker.
* ``delivered-ids`` - the event ids delivered lately, over every stream (``state.delivered``).
* ``pending-objects`` - the objects of batches a sink has yet to confirm (``delivery.journal``).

The version a commit must present is the object's ETag: a write carries ``If-Match: <etag>`` (or
``If-None-Match: *`` to create) and a delete ``If-Match``, so S3 itself refuses a stale writer.
Every document gets a random ``revision`` so that two writes of equal content still differ in ETag
(a stream reset and recreated never matches a stale version).

Every call goes through ``aws.call`` / ``aws.read_object``: ``FORWARDER_HTTP_TIMEOUT`` bounds it whole
(retries and the body's read included) and a stop request ends it; a failure is a StateError naming
the object.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Callable, Dict, Optional, Tuple
from urllib.parse import quote, unquote

from .. import aws
from ..errors import ConflictError, StateError
from ..jsonutil import dumps, loads
from .lease import SlotLease, acquire
from .locations import s3_parts
from .model import StreamState
from .names import MARK, MIN_ROOM, bounded, is_bounded
from .slots import commit_stream, load_stream, stored_key
from .store import Loaded, StorePlace

_STREAMS = "streams/"
_SUFFIX = ".json"
_MAX_KEY = 1024  # bytes of an S3 object key
_LEASE = "lease.json"
_REVISION = "revision"
_FIX = "repair or delete the object (state reset)"


def key_to_name(key: str, limit: int = _MAX_KEY) -> str:
    """Percent-encode every byte but letters, digits and ``_.-~@``: reversible, no ``/`` in a name;
    bounded to ``limit`` bytes (``names.bounded``)."""
    if not key:
        raise ValueError("a stream key must not be empty")
    return bounded(quote(key, safe="@"), key, limit - len(_SUFFIX), MARK) + _SUFFIX


class _ObjectSlot:
    """One S3 object, put and deleted by compare-and-swap on its ETag."""

    def __init__(self, client: Any, bucket: str, key: str) -> None:
        self._client = client
        self._bucket = bucket
        self._key = key
        self.location = f"s3://{bucket}/{key}"

    def read(self) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        try:
            data, etag = aws.read_object(self._client, self._bucket, self._key, "S3 GetObject")
        except aws.failures() as exc:
            if aws.error_code(exc) in ("NoSuchKey", "404"):
                return None, None
            raise self._failed("read", exc) from None
        if not etag:
            raise StateError(f"cannot read state object {self.location}: S3 answered without an ETag")
        try:
            doc = loads(data)
        except ValueError as exc:
            raise StateError(f"state object {self.location} is not valid JSON ({exc}); {_FIX}") from None
        if not isinstance(doc, dict):
            raise StateError(f"state object {self.location} does not hold a JSON object; {_FIX}")
        doc.pop(_REVISION, None)
        return doc, etag

    def put(self, doc: Dict[str, Any], expected: Optional[str]) -> str:
        condition = {"IfNoneMatch": "*"} if expected is None else {"IfMatch": expected}
        body = dumps({**doc, _REVISION: secrets.token_hex(8)})
        response = self._call(
            "write",
            "put_object",
            "S3 PutObject",
            expected,
            Body=body,
            ContentType="application/json",
            **condition,
        )
        if not (isinstance(response, dict) and response.get("ETag")):  # the version the next write presents
            raise StateError(f"cannot write state object {self.location}: S3 answered without an ETag")
        return str(response["ETag"])

    def delete(self, expected: str) -> None:
        self._call("delete", "delete_object", "S3 DeleteObject", expected, IfMatch=expected)

    def remove(self) -> None:
        """Unconditional delete (a stream reset)."""
        self._call("delete", "delete_object", "S3 DeleteObject")

    def _call(
        self, action: str, operation: str, what: str, expected: Optional[str] = None, **params: Any
    ) -> Any:
        """``operation`` on the object under ``aws.call``'s deadline; a failure as ``_failed(action)``."""
        try:
            return aws.call(self._client, operation, what, Bucket=self._bucket, Key=self._key, **params)
        except aws.failures() as exc:
            raise self._failed(action, exc, expected) from None

    def _failed(self, action: str, exc: Exception, expected: Optional[str] = None) -> StateError:
        code = aws.error_code(exc)
        if action != "read" and code in aws.CONFLICT_CODES:
            return ConflictError(
                f"{self.location} was changed by another writer (expected ETag {expected or 'none'})"
            )
        return StateError(f"cannot {action} state object {self.location}: {code or exc}")


class S3Store:
    """A ``StateStore`` under ``s3://bucket/prefix``."""

    def __init__(self, client: Any, bucket: str, prefix: str, clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._bucket = bucket
        self._prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        self._clock = clock
        self.location = f"s3://{bucket}/{self._prefix}"
        self._room = _MAX_KEY - len((self._prefix + _STREAMS).encode("utf-8"))  # for a stream's name
        if self._room - len(_SUFFIX) < MIN_ROOM:
            raise ValueError(f"state location {self.location[:100]}...: the prefix is too long for S3 keys")

    def __repr__(self) -> str:
        return f"S3Store({self.location!r})"

    def load(self, key: str) -> Loaded:
        return load_stream(self._stream(key), key)

    def commit(self, key: str, state: StreamState, version: Optional[str]) -> str:
        return commit_stream(self._stream(key), key, state, version)

    def keys(self) -> list[str]:
        prefix = self._prefix + _STREAMS
        found = []
        try:
            for key in aws.s3_keys(self._client, self._bucket, prefix):
                name = key[len(prefix) :]
                if not name.endswith(_SUFFIX) or "/" in name:
                    continue
                if not is_bounded(name, MARK):
                    found.append(unquote(name[: -len(_SUFFIX)]))
                elif (stored := stored_key(self.slot(_STREAMS + name))) is not None:
                    found.append(stored)
        except aws.failures() as exc:
            raise StateError(
                f"cannot list state objects under {self.location}: {aws.error_code(exc) or exc}"
            ) from None
        return sorted(found)

    def delete(self, key: str) -> None:
        self._stream(key).remove()

    def acquire_lease(self, owner: str, ttl_seconds: int) -> SlotLease:
        return acquire(self.slot(_LEASE), owner, ttl_seconds, self._clock)

    def slot(self, name: str) -> _ObjectSlot:
        return _ObjectSlot(self._client, self._bucket, self._prefix + name)

    def _stream(self, key: str) -> _ObjectSlot:
        return self.slot(_STREAMS + key_to_name(key, self._room))


def open_s3(location: str, timeout_seconds: float = 60.0, clock: Callable[[], float] = time.time) -> S3Store:
    """``s3://bucket`` or ``s3://bucket/prefix``; boto3 finds region and credentials as usual;
    ``timeout_seconds`` (FORWARDER_HTTP_TIMEOUT) bounds each call whole."""
    bucket, prefix = s3_parts(location)
    return S3Store(aws.client("s3", timeout_seconds), bucket, prefix, clock)


def open_at(place: StorePlace) -> S3Store:
    return open_s3(place.location, place.timeout_seconds)
