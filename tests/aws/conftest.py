"""AWS resources on the moto server (the ``aws`` fixture), made per test, and an endpoint that never
answers (``silent``)."""

from __future__ import annotations

import itertools
import socket
from typing import Iterator

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


@pytest.fixture
def silent(aws, monkeypatch) -> Iterator[socket.socket]:
    """An endpoint that takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.getsockname()[1]}")
        yield server


def connections(server: socket.socket) -> int:
    """How many connections ``server`` (``silent``) was given."""
    server.setblocking(False)
    count = 0
    while True:
        try:
            server.accept()[0].close()
        except BlockingIOError:
            return count
        count += 1
