"""The HTTP NDJSON sink against a loopback collector."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json

import pytest

from forwarder import retry
from forwarder.config import load_settings
from forwarder.errors import ConfigError, SinkError
from forwarder.events import Event
from forwarder.http_headers import parse_headers
from forwarder.sinks import open_sink
from forwarder.sinks.http_ndjson import HttpNdjsonSink, authorization
from forwarder.sinks.settings import SinkSettings
from tests.receivers.fluent_bit_http import FluentBitHttpInput
from tests.receivers.http_collector import HttpCollector
from tests.sinks.helpers import only_rejection

SECRET = "c0llector-t0ken-secret"


def event(n: int, pad: str = "") -> Event:
    event_id = hashlib.sha256(f"r{n}".encode()).hexdigest()
    body = {"event": {"id": event_id}, "message": f"nº{n} \u2603 {pad}"}
    return Event(event_id, 1_767_323_045_000_000, json.dumps(body).encode())


def sink_for(
    collector: HttpCollector, attempts: int = 4, sleep: retry.Sleep = retry.sleep, **settings
) -> HttpNdjsonSink:
    settings.setdefault("token", SECRET)
    policy = retry.RetryPolicy(attempts=attempts, sleep=sleep)
    return HttpNdjsonSink(SinkSettings(uri=collector.url, **settings), retry_policy=policy)


@pytest.mark.parametrize("use_gzip", [True, False])
def test_events_arrive_as_ndjson_lines_byte_for_byte(waits, use_gzip):
    events = [event(n) for n in range(4)] + [Event("f" * 64, 0, b"CEF:0|a|b|1|x|y|3|k=v", is_json=False)]
    with HttpCollector(authorization=f"Bearer {SECRET}") as collector:
        result = sink_for(collector, sleep=waits, gzip=use_gzip).send(events)

        assert (result.delivered, result.rejected) == (5, [])
        assert collector.lines() == [e.body for e in events]
        (request,) = collector.seen()
        assert request.headers["content-type"] == "application/x-ndjson"
        assert request.headers.get("content-encoding") == ("gzip" if use_gzip else None)


def test_configured_headers_and_auth_kinds_are_sent():
    basic = "Basic " + base64.b64encode(b"logstash:pa ss:word").decode()
    with HttpCollector(authorization=basic, required_headers={"X-Sumo-Category": "sec/audit"}) as collector:
        sink = sink_for(
            collector, token="logstash:pa ss:word", auth="basic", headers={"X-Sumo-Category": "sec/audit"}
        )
        assert sink.send([event(1)]).delivered == 1
    with HttpCollector(authorization=SECRET) as collector:  # Cribl: the header is the token
        assert sink_for(collector, auth="token").send([event(2)]).delivered == 1


def test_a_wrong_token_raises_without_the_token(waits):
    with HttpCollector(authorization="Bearer something-else") as collector:
        sink = sink_for(collector, sleep=waits)
        with pytest.raises(SinkError) as caught:
            sink.send([event(1)])

        assert "401" in str(caught.value) and not caught.value.retryable
        assert SECRET not in str(caught.value) and SECRET not in repr(sink)
        assert waits == []


def test_busy_collector_is_retried_then_gives_up_retryable(waits):
    with HttpCollector() as collector:
        collector.fail_next(2, status=503, retry_after=2)
        collector.drop_connection_next(1)
        assert sink_for(collector, sleep=waits).send([event(1)]).delivered == 1
        assert waits[:2] == [2.0, 2.0] and len(waits) == 3

        collector.fail_next(10, status=500)
        with pytest.raises(SinkError) as caught:
            sink_for(collector, sleep=waits, attempts=3).send([event(2)])
        assert caught.value.retryable
        assert collector.lines() == [event(1).body]


def test_413_splits_and_rejects_an_event_too_large_alone(waits):
    big = event(99, pad="x" * 5000)
    events = [event(n) for n in range(6)] + [big]
    with HttpCollector(max_content_length=2000) as collector:
        result = sink_for(collector, sleep=waits, gzip=False).send(events)

        assert "413" in only_rejection(result, big, delivered=6).reason
        assert sorted(collector.lines()) == sorted(e.body for e in events[:6])


def test_requests_are_bounded_by_count(waits):
    with HttpCollector() as collector:
        sink_for(collector, sleep=waits, batch_events=2).send([event(n) for n in range(5)])
        assert len(collector.seen()) == 3 and len(collector.lines()) == 5


def test_registry_and_url_checks():
    with HttpCollector() as collector:
        sink = open_sink(SinkSettings(uri=collector.url))
        assert isinstance(sink, HttpNdjsonSink)
        assert sink.send([event(1)]).delivered == 1
        assert "authorization" not in collector.seen()[0].headers
    with pytest.raises(ValueError, match="loopback"):
        HttpNdjsonSink(SinkSettings(uri="http://collector.example.com/in"))


def test_authorization_and_header_parsing():
    assert authorization("apikey", "abc") == "ApiKey abc"
    with pytest.raises(ValueError, match="user:password"):
        authorization("basic", "no-colon")
    with pytest.raises(ValueError, match="FORWARDER_SINK_TOKEN"):
        authorization("bearer", "has space")
    assert parse_headers("X-Sumo-Category: a/b; X-Sumo-Name:n ") == {
        "X-Sumo-Category": "a/b",
        "X-Sumo-Name": "n",
    }
    with pytest.raises(ValueError):
        parse_headers("no colon here")


def test_a_raw_line_break_in_a_body_cannot_split_its_line():
    pretty = Event("p" * 64, 0, b'{"a":\n"x"}')
    text = Event("t" * 64, 0, b"CEF:0|V|P|1|a|b|3|msg=one\r\ntwo", is_json=False)
    with HttpCollector(authorization=f"Bearer {SECRET}") as collector:
        assert sink_for(collector, gzip=False).send([pretty, text]).delivered == 2
        assert collector.lines() == [b'{"a": "x"}', b"CEF:0|V|P|1|a|b|3|msg=one\\r\\ntwo"]


# --- the body kind and its content type (FORWARDER_HTTP_BODY, FORWARDER_SINK_HEADERS) ----------------

CONFIGURED = {
    "FORWARDER_API_URL": "https://api.example.com",
    "FORWARDER_CLIENT_ID": "id",
    "FORWARDER_CLIENT_SECRET": "s3cr3t-value",
}


def configured_sink(url: str, sleep: retry.Sleep = retry.sleep, **env: str) -> HttpNdjsonSink:
    sink = open_sink(load_settings({**CONFIGURED, "FORWARDER_SINK": url, **env}).sink, pace=retry.Pace(sleep))
    assert isinstance(sink, HttpNdjsonSink)
    return sink


def test_an_ndjson_body_is_refused_by_a_json_only_collector(waits):
    with FluentBitHttpInput() as fluent_bit:
        with pytest.raises(SinkError, match="invalid 'Content-Type'") as caught:
            configured_sink(fluent_bit.url, sleep=waits).send([event(1)])

        assert not caught.value.retryable and fluent_bit.records() == []


@pytest.mark.parametrize("use_gzip", ["true", "false"])
def test_a_json_array_body_reaches_a_json_only_collector(waits, use_gzip):
    events = [event(n) for n in range(7)]
    with FluentBitHttpInput() as fluent_bit:
        sink = configured_sink(
            fluent_bit.url,
            sleep=waits,
            FORWARDER_HTTP_BODY="json-array",
            FORWARDER_SINK_GZIP=use_gzip,
            FORWARDER_BATCH_EVENTS="3",
        )
        result = sink.send(events)

        assert (result.delivered, result.rejected) == (7, [])
        assert fluent_bit.records() == [json.loads(e.body) for e in events]  # each event byte for byte
        assert [seen.headers["content-type"] for seen in fluent_bit.seen()] == ["application/json"] * 3


@pytest.mark.parametrize("body", ["ndjson", "json-array"])
def test_the_configured_content_type_replaces_the_default(waits, body):
    with HttpCollector() as collector:
        sink = configured_sink(
            collector.url,
            sleep=waits,
            FORWARDER_HTTP_BODY=body,
            FORWARDER_SINK_HEADERS="content-type: text/plain",
        )
        with contextlib.suppress(SinkError):  # this collector takes lines, not an array
            sink.send([event(1)])
        (request,) = collector.seen()

        assert request.headers["content-type"] == "text/plain"


def test_a_json_array_splits_on_413_and_stays_an_array(waits):
    big = event(99, pad="x" * 5000)
    events = [event(n) for n in range(6)] + [big]
    with FluentBitHttpInput() as fluent_bit:
        fluent_bit.max_body = 2000
        sink = configured_sink(
            fluent_bit.url,
            sleep=waits,
            FORWARDER_HTTP_BODY="json-array",
            FORWARDER_SINK_GZIP="false",
        )
        result = sink.send(events)

        assert "413" in only_rejection(result, big, delivered=6).reason
        assert sorted(map(json.dumps, fluent_bit.records())) == sorted(
            json.dumps(json.loads(e.body)) for e in events[:6]
        )


def test_a_text_event_cannot_be_an_array_element():
    text = Event("t" * 64, 0, b"CEF:0|V|P|1|a|b|3|msg=x", is_json=False)
    with FluentBitHttpInput() as fluent_bit:
        result = configured_sink(fluent_bit.url, FORWARDER_HTTP_BODY="json-array").send([event(1), text])

        assert "JSON array" in only_rejection(result, text, delivered=1).reason
        assert fluent_bit.records() == [json.loads(event(1).body)]


def test_cef_with_a_json_array_body_is_a_configuration_error():
    with pytest.raises(ConfigError) as caught:
        load_settings(
            {
                **CONFIGURED,
                "FORWARDER_SINK": "https://collector.example.com/in",
                "FORWARDER_HTTP_BODY": "json-array",
                "FORWARDER_FORMAT": "cef",
            }
        )
    assert caught.value.problems == [
        "FORWARDER_FORMAT: cef events are text lines, which FORWARDER_HTTP_BODY=json-array cannot carry; "
        "use ndjson"
    ]
