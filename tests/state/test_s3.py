"""The S3 state store against the moto server: the shared contract plus S3 specifics."""

from __future__ import annotations

import boto3
import pytest

from forwarder.errors import StateError
from forwarder.state import open_store
from forwarder.state.s3 import S3Store, key_to_name, open_s3
from tests.state.contract import (
    KEY,
    LONG_KEYS,
    T0_US,
    UNICODE_KEYS,
    StoreContract,
    delivered,
    lookalike,
    make_record,
)


class TestS3StoreContract(StoreContract):
    @pytest.fixture
    def open_handle(self, bucket):
        return lambda clock: open_s3(f"s3://{bucket}/team/forwarder", clock=clock)


def test_registry_opens_s3_locations(bucket):
    store = open_store(f"s3://{bucket}/a/b/")
    assert isinstance(store, S3Store)
    assert store.location == f"s3://{bucket}/a/b/"


@pytest.mark.parametrize("location", ["s3://", "s3:///prefix", "s3://bucket/p?x=1"])
def test_bad_locations_are_refused(location):
    with pytest.raises(ValueError, match="state location for S3 must look like"):
        open_s3(location)


def test_layout_keeps_streams_lease_and_scheduler_apart(bucket):
    store = open_s3(f"s3://{bucket}/p")
    store.commit(KEY, delivered(make_record("a", T0_US)), None)
    store.acquire_lease("run-a", 60)
    store.slot("scheduler").put({"next": KEY}, None)
    names = sorted(o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket)["Contents"])
    assert names == ["p/lease.json", "p/scheduler", "p/streams/user%2Falice@example.com.json"]
    assert store.keys() == [KEY]


def test_prefixes_are_separate_stores(bucket):
    one, two = open_s3(f"s3://{bucket}/one"), open_s3(f"s3://{bucket}/two")
    one.commit(KEY, delivered(make_record("a", T0_US)), None)
    assert two.keys() == []
    two.acquire_lease("run-b", 60)
    one.acquire_lease("run-a", 60)


def test_names_are_reversible_and_flat():
    for key in UNICODE_KEYS:
        assert "/" not in key_to_name(key)


def test_short_keys_keep_the_names_they_always_had():
    assert key_to_name(KEY) == "user%2Falice@example.com.json"
    assert (
        key_to_name("domain/%2F already-encoded ~tilde") == "domain%2F%252F%20already-encoded%20~tilde.json"
    )
    assert key_to_name(lookalike(KEY)).endswith("%E2%80%A6" + lookalike(KEY)[-32:] + ".json")  # its own


@pytest.mark.parametrize("prefix", ["p", "deep/" + "x" * 600])
def test_every_object_key_fits_s3s_limit(bucket, prefix):
    store = open_s3(f"s3://{bucket}/{prefix}")
    for key in [*LONG_KEYS, "user/" + "b" * 990 + "@example.com"]:
        store.commit(key, delivered(make_record(key[-20:], T0_US)), None)
    names = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket)["Contents"]]

    assert len(names) == 4 and all(len(name.encode()) <= 1024 for name in names)
    assert store.keys() == sorted([*LONG_KEYS, "user/" + "b" * 990 + "@example.com"])


def test_corrupt_object_is_an_error_naming_it(bucket):
    store = open_s3(f"s3://{bucket}/p")
    boto3.client("s3").put_object(Bucket=bucket, Key="p/streams/" + key_to_name(KEY), Body=b"{not json")
    with pytest.raises(StateError, match=f"s3://{bucket}/p/streams/.*not valid JSON"):
        store.load(KEY)


def test_missing_bucket_is_an_error_not_an_empty_state(aws):
    store = open_s3("s3://no-such-bucket-here/p")
    with pytest.raises(StateError, match=r"no-such-bucket-here.*NoSuchBucket"):
        store.load(KEY)


def test_a_prefix_leaving_no_room_for_names_is_refused(aws):
    with pytest.raises(ValueError, match="prefix is too long"):
        open_s3("s3://bucket/" + "p" * 1000)
