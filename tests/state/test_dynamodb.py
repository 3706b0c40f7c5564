"""The DynamoDB state store against the moto server: the shared contract plus DynamoDB specifics."""

from __future__ import annotations

import boto3
import pytest

from forwarder.errors import StateError
from forwarder.state import open_store
from forwarder.state.dynamodb import LEASE_TTL_ATTRIBUTE, DynamoDBStore, open_dynamodb
from forwarder.state.model import StreamState
from tests.state.contract import (
    KEY,
    LONG_KEYS,
    LONG_USER,
    T0_US,
    FakeClock,
    StoreContract,
    delivered,
    make_record,
)


class TestDynamoDBStoreContract(StoreContract):
    @pytest.fixture
    def open_handle(self, table):
        return lambda clock: open_dynamodb(f"dynamodb://{table}", clock=clock)


def test_registry_opens_dynamodb_locations(table):
    store = open_store(f"dynamodb://{table}")
    assert isinstance(store, DynamoDBStore)
    assert store.location == f"dynamodb://{table}"


@pytest.mark.parametrize("location", ["dynamodb://", "dynamodb://t?x=1"])
def test_bad_locations_are_refused(location):
    with pytest.raises(ValueError, match="dynamodb://table"):
        open_dynamodb(location)


def test_lease_item_carries_a_ttl_after_its_expiry(table):
    clock = FakeClock()
    store = open_dynamodb(f"dynamodb://{table}", clock=clock)
    store.acquire_lease("run-a", 60)
    item = boto3.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": "lease"}})["Item"]
    expires_s = T0_US // 1_000_000 + 60
    assert expires_s < int(item[LEASE_TTL_ATTRIBUTE]["N"]) <= expires_s + 86400
    store.commit(KEY, StreamState(), None)
    stream_item = boto3.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": "stream#" + KEY}})
    assert LEASE_TTL_ATTRIBUTE not in stream_item["Item"]  # stream state never expires


def test_scheduler_item_is_not_a_stream(table):
    store = open_dynamodb(f"dynamodb://{table}")
    store.slot("scheduler").put({"next": KEY}, None)
    assert store.keys() == []


def test_corrupt_item_is_an_error_naming_it(table):
    boto3.client("dynamodb").put_item(
        TableName=table, Item={"pk": {"S": "stream#" + KEY}, "doc": {"S": "{nope"}, "revision": {"S": "1"}}
    )
    with pytest.raises(StateError, match=f"dynamodb://{table} item .*corrupt"):
        open_dynamodb(f"dynamodb://{table}").load(KEY)


def test_missing_table_is_an_error_not_an_empty_state(aws):
    with pytest.raises(StateError, match=r"no-such-table.*ResourceNotFoundException"):
        open_dynamodb("dynamodb://no-such-table").load(KEY)


def test_item_too_large_names_the_limit(table):
    store = open_dynamodb(f"dynamodb://{table}")
    records = [make_record(f"{n:064x}", T0_US + n) for n in range(6000)]
    with pytest.raises(StateError, match="400 KB"):
        store.commit(KEY, delivered(*records), None)


@pytest.mark.parametrize("namespace", ["", "tenant-" + "t" * 500])
def test_every_partition_key_fits_dynamodbs_limit(table, namespace):
    store = open_dynamodb(f"dynamodb://{table}/{namespace}" if namespace else f"dynamodb://{table}")
    for key in LONG_KEYS:
        store.commit(key, delivered(make_record(key[-20:], T0_US)), None)
    store.commit(KEY, StreamState(), None)
    keys = [i["pk"]["S"] for i in boto3.client("dynamodb").scan(TableName=table)["Items"]]

    assert len(keys) == 4 and all(len(key.encode()) <= 2048 for key in keys)
    assert (f"{namespace}/" if namespace else "") + "stream#" + KEY in keys  # a short key as it always was
    assert store.keys() == sorted([*LONG_KEYS, KEY])


def test_the_long_address_of_the_report_commits(table):
    store = open_dynamodb(f"dynamodb://{table}")
    version = store.commit(LONG_USER, delivered(make_record("a", T0_US)), None)
    assert store.load(LONG_USER).version == version


def test_a_namespace_leaving_no_room_for_names_is_refused(aws):
    with pytest.raises(ValueError, match="namespace is too long"):
        open_dynamodb("dynamodb://table/" + "t" * 2030)
