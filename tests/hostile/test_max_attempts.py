"""FORWARDER_MAX_ATTEMPTS bounds every sink's tries: each sink, built from the settings as a run builds
it, meets a loopback receiver that keeps failing, and the receiver counts the tries."""

from __future__ import annotations

import hashlib
import json
import socket
import socketserver
from typing import Callable, Dict, Iterator

import pytest

from forwarder.config import load_settings
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.retry import Pace
from forwarder.sinks import open_sink
from tests.fakes import Waits
from tests.receivers.aws_endpoint import AwsEndpoint
from tests.receivers.bulk import BulkReceiver
from tests.receivers.hec import HecReceiver
from tests.receivers.http_collector import HttpCollector, LoopbackReceiver
from tests.receivers.loopback import LoopbackServer

BASE = {
    "FORWARDER_API_URL": "https://api.example.com",
    "FORWARDER_CLIENT_ID": "id",
    "FORWARDER_CLIENT_SECRET": "s3cr3t-value",
    "FORWARDER_MAX_ATTEMPTS": "2",
}


def event() -> Event:
    event_id = hashlib.sha256(b"max attempts").hexdigest()
    return Event(event_id, 1_767_225_600_000_000, json.dumps({"event": {"id": event_id}}).encode())


def tries_until_given_up(env: Dict[str, str], waits: Waits) -> None:
    sink = open_sink(load_settings({**BASE, **env}).sink, pace=Pace(sleep=waits))
    try:
        with pytest.raises(SinkError) as caught:
            sink.send([event()])
        assert caught.value.retryable
    finally:
        sink.close()


def hec_env(receiver: HecReceiver) -> Dict[str, str]:
    return {"FORWARDER_SINK": receiver.url, "FORWARDER_SINK_TOKEN": receiver.token}


def bulk_env(receiver: BulkReceiver) -> Dict[str, str]:
    return {"FORWARDER_SINK": receiver.url, "FORWARDER_SINK_TOKEN": receiver.encoded_api_key()}


def collector_env(receiver: HttpCollector) -> Dict[str, str]:
    return {"FORWARDER_SINK": receiver.url}


HTTP_SINKS: Dict[str, Callable[[], LoopbackReceiver]] = {
    "hec": HecReceiver,
    "elasticsearch": BulkReceiver,
    "http": HttpCollector,
}
HTTP_ENV = {"hec": hec_env, "elasticsearch": bulk_env, "http": collector_env}


@pytest.mark.parametrize("kind", sorted(HTTP_SINKS))
def test_http_sinks_try_as_often_as_the_setting_says(waits, kind):
    with HTTP_SINKS[kind]() as receiver:
        receiver.fail_next(10, status=503)
        tries_until_given_up(HTTP_ENV[kind](receiver), waits)  # type: ignore[operator]

        assert len(receiver.seen()) == 2 and len(waits) == 1


class _Slam(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.server.owner.count += 1  # type: ignore[attr-defined]
        self.request.shutdown(socket.SHUT_RDWR)  # mid-handshake: the client's TLS fails


class Slamming(LoopbackServer):
    """Takes each connection and closes it at once, counting them."""

    def __init__(self) -> None:
        self.count = 0
        super().__init__(_Slam)


@pytest.mark.parametrize("scheme", ["syslog+tls", "relp+tcp"])
def test_syslog_tries_as_often_as_the_setting_says(waits, scheme):
    with Slamming() as receiver:
        tries_until_given_up({"FORWARDER_SINK": f"{scheme}://127.0.0.1:{receiver.port}"}, waits)

        assert receiver.count == 2 and len(waits) == 1


@pytest.fixture
def endpoint(aws, monkeypatch) -> Iterator[AwsEndpoint]:
    with AwsEndpoint() as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.http_url)
        yield server


@pytest.mark.parametrize("sink", ["s3://audit-lake/p", "firehose://audit"])
def test_aws_sinks_try_as_often_as_the_setting_says(endpoint, waits, sink):
    endpoint.fail_next(10, status=503)
    tries_until_given_up({"FORWARDER_SINK": sink}, waits)

    assert len(endpoint.seen()) == 2
