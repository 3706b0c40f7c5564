"""Every HTTP sink against receivers that lie (a proxy's 200 web page), stall (a reply trickled a byte
at a time) or break (a reply closed mid-body): a batch counts as delivered only on the receiver's
own proof, every stall ends at the deadline, and every error quotes what came back."""

from __future__ import annotations

import hashlib
import json

import pytest

from forwarder import retry
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.sinks.elasticsearch import ElasticsearchSink
from forwarder.sinks.hec import HecSink
from forwarder.sinks.http_ndjson import HttpNdjsonSink
from forwarder.sinks.settings import SinkSettings
from tests.fakes import Waits
from tests.receivers.bulk import BulkReceiver
from tests.receivers.hec import HecReceiver
from tests.receivers.http_collector import HttpCollector, Reply
from tests.sinks.helpers import sink_settings

STREAM = "logs-emailauth.audit-default"


@pytest.fixture
def waits():
    return Waits()


def two_tries(waits=None):
    """Two tries, the wait between them recorded in ``waits``, never slept."""
    return retry.RetryPolicy(attempts=2, sleep=Waits() if waits is None else waits)


def event(n: int) -> Event:
    event_id = hashlib.sha256(f"lie {n}".encode()).hexdigest()
    body = {"@timestamp": "2026-01-02T03:04:05.123456Z", "event": {"id": event_id}, "message": f"m{n}"}
    return Event(event_id, 1_767_323_045_123_456, json.dumps(body).encode())


def hec_sink(receiver, waits=None, **kw):
    settings = SinkSettings(uri=receiver.url, token=receiver.token, **kw)
    return HecSink(settings, retry_policy=two_tries(waits))


def es_sink(receiver, waits=None, **kw):
    settings = SinkSettings(uri=receiver.url, token=receiver.encoded_api_key(), **kw)
    return ElasticsearchSink(settings, retry_policy=two_tries(waits))


def http_sink(receiver, waits=None, **kw):
    return HttpNdjsonSink(sink_settings(uri=receiver.url, **kw), retry_policy=two_tries(waits))


def stored(receiver) -> int:
    if isinstance(receiver, HecReceiver):
        return len(receiver.events())
    if isinstance(receiver, BulkReceiver):
        return len(receiver.ids(STREAM))
    return len(receiver.lines())


KINDS = [(HecReceiver, hec_sink), (BulkReceiver, es_sink), (HttpCollector, http_sink)]
IDS = ["hec", "elasticsearch", "http"]


@pytest.mark.parametrize("receiver_type, make_sink", KINDS, ids=IDS)
def test_a_proxy_answering_200_with_a_web_page_delivers_nothing(receiver_type, make_sink):
    with receiver_type() as receiver:
        receiver.html_ok_next(5)
        with pytest.raises(SinkError, match="Please sign in") as caught:
            make_sink(receiver).send([event(1), event(2)])
        assert caught.value.retryable and "nothing counts as delivered" in str(caught.value)
        assert stored(receiver) == 0


@pytest.mark.parametrize("receiver_type, make_sink", KINDS, ids=IDS)
@pytest.mark.parametrize("fault", ["cut_next", "garble_next"])
def test_a_reply_closed_mid_body_or_undecodable_is_retried(receiver_type, make_sink, waits, fault):
    with receiver_type() as receiver:
        getattr(receiver, fault)(1)
        result = make_sink(receiver, waits=waits).send([event(1)])
        assert result.delivered == 1 and len(waits) == 1 and stored(receiver) >= 1


@pytest.mark.parametrize("receiver_type, make_sink", KINDS, ids=IDS)
def test_a_trickled_reply_ends_at_the_deadline(receiver_type, make_sink):
    with receiver_type() as receiver:
        receiver.trickle_next(2, pause=0.3)  # each byte well inside the timeout, the reply never
        with pytest.raises(SinkError, match="no complete response within 1 s"):
            make_sink(receiver, timeout_seconds=1).send([event(1)])


def test_hec_json_without_code_0_is_not_proof():
    class Shim(HecReceiver):
        def answer(self, method, target, headers, raw) -> Reply:
            super().answer(method, target, headers, raw)
            return 200, b'{"status": "ok"}', {"Content-Type": "application/json"}

    with Shim() as receiver, pytest.raises(SinkError, match=r"code\": 0"):
        hec_sink(receiver).send([event(1)])


def test_elasticsearch_posts_to_bulk_so_bulk_only_receivers_take_it():
    with BulkReceiver(bulk_only=True) as receiver:
        assert es_sink(receiver).send([event(1), event(2)]).delivered == 2
        assert [s.path for s in receiver.seen()] == ["/_bulk"]
        assert len(receiver.ids(STREAM)) == 2


def test_a_plain_text_refusal_is_quoted_in_the_error():
    class FluentBit(BulkReceiver):
        def answer(self, method, target, headers, raw) -> Reply:
            return 400, b"error: invalid HTTP endpoint", {"Content-Type": "text/plain"}

    with FluentBit() as receiver, pytest.raises(SinkError, match="HTTP 400: error: invalid HTTP endpoint"):
        es_sink(receiver).send([event(1)])


def test_an_http_collector_reply_must_match_the_configured_body_check():
    with HttpCollector() as receiver:
        assert http_sink(receiver, accept_body=r'"accepted": *1\b').send([event(1)]).delivered == 1
        with pytest.raises(SinkError, match="does not match"):
            http_sink(receiver, accept_body=r'"stored"').send([event(2)])
    with pytest.raises(ValueError, match="FORWARDER_SINK_ACCEPT_BODY"):
        http_sink(receiver, accept_body="(")
