"""The boto3 sinks (S3, Firehose) and the S3 quarantine against an endpoint that trickles its answer a
byte at a time, each byte well inside the read timeout: the call ends at the HTTP timeout, or on a
stop request, and nothing counts as delivered."""

from __future__ import annotations

import hashlib
import json
import threading
import time

import pytest

from forwarder import aws, retry, stop
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.quarantine import unplaceable
from forwarder.quarantine.s3 import S3Quarantine
from forwarder.sinks.firehose import FirehoseSink
from forwarder.sinks.s3 import S3Sink
from forwarder.sinks.settings import SinkSettings
from tests.fakes import NO_WAITS
from tests.receivers.aws_endpoint import AwsEndpoint
from tests.receivers.trickling_handshake import TLS_OPENING, TricklingHandshake

GUARD_S = 60  # only a hang reaches this


def event(n: int) -> Event:
    event_id = hashlib.sha256(f"aws deadline {n}".encode()).hexdigest()
    return Event(event_id, 1_767_225_600_000_000, json.dumps({"event": {"id": event_id}}).encode())


@pytest.fixture
def endpoint(aws, monkeypatch):
    with AwsEndpoint() as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.http_url)
        yield server
    stop.reset()


def s3_sink(timeout: float) -> S3Sink:
    return S3Sink(SinkSettings(uri="s3://audit-lake/p", timeout_seconds=timeout))


def firehose_sink(timeout: float) -> FirehoseSink:
    settings = SinkSettings(uri="firehose://audit", timeout_seconds=timeout)
    return FirehoseSink(settings, retry_policy=retry.RetryPolicy(attempts=2, sleep=NO_WAITS.sleep))


def outcome_of(send, meanwhile=lambda: None) -> BaseException:
    """What ``send`` raised, run on a thread that must come back well before the guard (``meanwhile``
    runs beside it)."""
    outcome = {}

    def run() -> None:
        try:
            outcome["result"] = send()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    meanwhile()
    worker.join(GUARD_S)
    assert not worker.is_alive(), "the call outlived its deadline"
    assert "result" not in outcome, f"counted as delivered: {outcome.get('result')}"
    return outcome["error"]


@pytest.mark.parametrize("make_sink", [s3_sink, firehose_sink], ids=["s3", "firehose"])
def test_a_trickled_answer_ends_at_the_http_timeout(endpoint, make_sink):
    endpoint.trickle_next(10, pause=0.3)  # every read well inside the 1 s timeout, no answer ever whole

    error = outcome_of(lambda: make_sink(1).send([event(1), event(2)]))

    assert isinstance(error, SinkError) and error.retryable
    assert "no complete response within 1 s (HTTP timeout)" in str(error)
    assert len(endpoint.seen()) == (2 if make_sink is firehose_sink else 1)  # botocore retried none


def test_an_untroubled_endpoint_is_proof_of_delivery(endpoint):
    assert s3_sink(1).send([event(1)]).delivered == 1
    assert firehose_sink(1).send([event(1), event(2)]).delivered == 2


def test_the_s3_quarantine_put_ends_at_the_http_timeout_too(endpoint):
    endpoint.trickle_next(1, pause=0.3)
    quarantine = S3Quarantine("s3://quarantine/q", client=aws.client("s3", 1))

    error = outcome_of(lambda: quarantine.keep("user:a", [unplaceable({"id": 1}, "no created_at")]))

    assert isinstance(error, SinkError) and "no complete response within 1 s" in str(error)


@pytest.mark.parametrize("make_sink", [s3_sink, firehose_sink], ids=["s3", "firehose"])
def test_a_stop_request_ends_a_trickled_call(endpoint, make_sink):
    endpoint.trickle_next(1, pause=0.3)
    sink = make_sink(900)  # only the stop can end it

    def stop_once_answering() -> None:
        while not endpoint.seen():  # the request arrived: its answer is trickling
            time.sleep(0.05)
        stop.request()

    error = outcome_of(lambda: sink.send([event(1)]), stop_once_answering)

    assert isinstance(error, stop.Stopped), repr(error)
    assert len(endpoint.seen()) == 1


def test_a_trickled_tls_handshake_with_the_endpoint_is_cut_and_named(aws, monkeypatch):
    """A boto3 call to an https endpoint whose TLS handshake trickles ends at the HTTP timeout, before
    the trickle does, and the error names the handshake and the endpoint."""
    with TricklingHandshake(TLS_OPENING) as peer:
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"https://{peer.address}")

        error = outcome_of(lambda: s3_sink(1).send([event(1)]))

        assert not peer.finished.is_set()  # the call did not wait for the trickle to end
    assert isinstance(error, SinkError) and error.retryable
    assert f"(HTTP timeout), cut during the TLS handshake with {peer.address}" in str(error)
