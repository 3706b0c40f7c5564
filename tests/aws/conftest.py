"""AWS resources on the moto server (the ``aws`` fixture), made per test."""

from __future__ import annotations

import itertools

import boto3
import pytest

_names = itertools.count(1)


def make_bucket() -> str:
    name = f"forwarder-state-{next(_names)}"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


def make_table() -> str:
    """A table shaped like the one template.yaml creates."""
    name = f"forwarder-state-{next(_names)}"
    client = boto3.client("dynamodb")
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


@pytest.fixture
def bucket(aws):
    return make_bucket()


@pytest.fixture
def table(aws):
    return make_table()
