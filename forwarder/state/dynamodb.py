"""State in a DynamoDB table: one item per stream, replaced by conditional writes.

The table has a string partition key ``pk`` and nothing else to configure (``template.yaml``
creates it). Items:

* ``stream#<key>`` - one stream's state; a key that would make ``pk`` pass DynamoDB's 2,048 bytes is
  cut and gets ``…<hash>`` (``names.bounded``), and ``keys()`` reads it from the item's document;
* ``lease`` - the run lease, with ``lease_expires`` (epoch seconds) for the table's TTL to clear
  a lease whose run died long ago (acquiring never depends on that: TTL deletion is lazy);
* ``scheduler`` - what the scheduler remembers between runs (``forwarder.scheduling``); also
  ``fanout-cycle``, the fan-out planner's cycle marker.
* ``delivered-ids`` - the event ids delivered lately, over every stream (``state.delivered``).
* ``pending-objects`` - the objects of batches a sink has yet to confirm (``delivery.journal``).

``dynamodb://table/<namespace>`` (a tenant, ``forwarder.tenants``) puts ``<namespace>/`` in front of
every key above, so tenants share one table without sharing an item; plain ``dynamodb://table``
keeps the keys a single-organization install has always had.

Each item holds the document as JSON text in ``doc`` (readable in the console) and a random
``revision``; every write is conditional on the revision read (or on the item being absent), so
DynamoDB itself refuses a stale writer. Every call goes through ``aws.call``: ``FORWARDER_HTTP_TIMEOUT``
bounds it whole (retries included) and a stop request ends it; a failure is a StateError naming the
table and item. An item is at most 400 KB: about 4,000 event ids in a
stream's look-back window; a busier stream needs the S3 store or a shorter window.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Callable, Dict, Optional, Tuple

from .. import aws
from ..errors import ConflictError, StateError
from ..jsonutil import dumps, loads
from ..timeutil import parse_iso
from .lease import SlotLease, acquire
from .locations import dynamodb_parts
from .model import StreamState
from .names import MARK, MIN_ROOM, bounded, is_bounded
from .slots import commit_stream, load_stream, stored_key
from .store import Loaded, StorePlace

KEY = "pk"
_MAX_KEY = 2048  # bytes of a partition key
_STREAM = "stream#"
_LEASE = "lease"
LEASE_TTL_ATTRIBUTE = "lease_expires"
_LEASE_TTL_GRACE_S = 3600  # TTL removes the item an hour after the lease expired
_FIX = "repair or delete the item (state reset)"


class _ItemSlot:
    """One item, put and deleted by compare-and-swap on its ``revision`` attribute."""

    def __init__(self, client: Any, table: str, pk: str, expiring: bool = False) -> None:
        self._client = client
        self._table = table
        self._pk = pk
        self._expiring = expiring  # a lease: give the item a TTL attribute from its "expires"
        self.location = f"dynamodb://{table} item {pk!r}"
        self._key = {KEY: {"S": pk}}

    def read(self) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        found = self._call("read", "get_item", "DynamoDB GetItem", Key=self._key, ConsistentRead=True)
        item = found.get("Item") if isinstance(found, dict) else None
        if item is None:
            return None, None
        try:
            doc = loads(item["doc"]["S"])
            version = item["revision"]["S"]
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"state {self.location} is corrupt ({exc}); {_FIX}") from None
        if not isinstance(doc, dict):
            raise StateError(f"state {self.location} does not hold a JSON object; {_FIX}")
        return doc, str(version)

    def put(self, doc: Dict[str, Any], expected: Optional[str]) -> str:
        version = secrets.token_hex(8)
        item = {KEY: {"S": self._pk}, "doc": {"S": dumps(doc).decode()}, "revision": {"S": version}}
        if self._expiring:
            seconds = parse_iso(doc["expires"]) // 1_000_000 + _LEASE_TTL_GRACE_S
            item[LEASE_TTL_ATTRIBUTE] = {"N": str(seconds)}
        self._call("write", "put_item", "DynamoDB PutItem", expected, Item=item, **self._condition(expected))
        return version

    def delete(self, expected: str) -> None:
        self._call(
            "delete",
            "delete_item",
            "DynamoDB DeleteItem",
            expected,
            Key=self._key,
            **self._condition(expected),
        )

    def remove(self) -> None:
        """Unconditional delete (a stream reset)."""
        self._call("delete", "delete_item", "DynamoDB DeleteItem", Key=self._key)

    def _call(
        self, action: str, operation: str, what: str, expected: Optional[str] = None, **params: Any
    ) -> Any:
        """``operation`` on the table under ``aws.call``'s deadline; a failure as ``_failed(action)``."""
        try:
            return aws.call(self._client, operation, what, TableName=self._table, **params)
        except aws.failures() as exc:
            raise self._failed(action, exc, expected) from None

    @staticmethod
    def _condition(expected: Optional[str]) -> Dict[str, Any]:
        if expected is None:
            return {"ConditionExpression": f"attribute_not_exists({KEY})"}
        return {
            "ConditionExpression": "revision = :expected",
            "ExpressionAttributeValues": {":expected": {"S": expected}},
        }

    def _failed(self, action: str, exc: Exception, expected: Optional[str] = None) -> StateError:
        code = aws.error_code(exc)
        if code == "ConditionalCheckFailedException":
            return ConflictError(
                f"{self.location} was changed by another writer (expected revision {expected or 'none'})"
            )
        if code == "ValidationException" and action == "write" and "item size" in aws.message(exc).lower():
            return StateError(
                f"cannot write state {self.location}: the item is over DynamoDB's 400 KB limit "
                "(use an s3:// state location or a shorter FORWARDER_LOOKBACK_WINDOW)"
            )
        if code == "ValidationException":  # DynamoDB's words say which value it refused
            return StateError(f"cannot {action} state {self.location}: {code}: {aws.message(exc)[:300]}")
        return StateError(f"cannot {action} state {self.location}: {code or exc}")


class DynamoDBStore:
    """A ``StateStore`` in the table of ``dynamodb://table``."""

    def __init__(
        self, client: Any, table: str, clock: Callable[[], float] = time.time, namespace: str = ""
    ) -> None:
        self._client = client
        self._table = table
        self._clock = clock
        self._prefix = f"{namespace}/" if namespace else ""
        self.location = f"dynamodb://{table}/{namespace}" if namespace else f"dynamodb://{table}"
        self._room = _MAX_KEY - len((self._prefix + _STREAM).encode("utf-8"))  # for a stream's name
        if self._room < MIN_ROOM:
            raise ValueError(f"state location {self.location[:100]}...: the namespace is too long")

    def __repr__(self) -> str:
        return f"DynamoDBStore({self.location!r})"

    def load(self, key: str) -> Loaded:
        return load_stream(self._stream(key), key)

    def commit(self, key: str, state: StreamState, version: Optional[str]) -> str:
        return commit_stream(self._stream(key), key, state, version)

    def keys(self) -> list[str]:
        found: list[str] = []
        try:
            pages = aws.pages(
                self._client,
                "scan",
                "DynamoDB Scan",
                lambda page: page.get("LastEvaluatedKey"),
                "ExclusiveStartKey",
                TableName=self._table,
                ProjectionExpression=KEY,
                FilterExpression=f"begins_with({KEY}, :stream)",
                ExpressionAttributeValues={":stream": {"S": self._prefix + _STREAM}},
            )
            skip = len(self._prefix + _STREAM)
            for page in pages:
                for item in page.get("Items", []):
                    name = item[KEY]["S"][skip:]
                    if not is_bounded(name, MARK):
                        found.append(name)
                    elif (stored := stored_key(self.slot(_STREAM + name))) is not None:
                        found.append(stored)
        except aws.failures() as exc:
            raise StateError(
                f"cannot list the streams in {self.location}: {aws.error_code(exc) or exc}"
            ) from None
        return sorted(found)

    def delete(self, key: str) -> None:
        self._stream(key).remove()

    def acquire_lease(self, owner: str, ttl_seconds: int) -> SlotLease:
        lease = _ItemSlot(self._client, self._table, self._prefix + _LEASE, expiring=True)
        return acquire(lease, owner, ttl_seconds, self._clock)

    def slot(self, name: str) -> _ItemSlot:
        return _ItemSlot(self._client, self._table, self._prefix + name)

    def _stream(self, key: str) -> _ItemSlot:
        if not key:
            raise ValueError("a stream key must not be empty")
        return self.slot(_STREAM + bounded(key, key, self._room, MARK))


def open_dynamodb(
    location: str, timeout_seconds: float = 60.0, clock: Callable[[], float] = time.time
) -> DynamoDBStore:
    """``dynamodb://table`` or ``dynamodb://table/namespace``; boto3 finds region and credentials;
    ``timeout_seconds`` (FORWARDER_HTTP_TIMEOUT) bounds each call whole."""
    table, namespace = dynamodb_parts(location)
    return DynamoDBStore(aws.client("dynamodb", timeout_seconds), table, clock, namespace)


def open_at(place: StorePlace) -> DynamoDBStore:
    return open_dynamodb(place.location, place.timeout_seconds)
