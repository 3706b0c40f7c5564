"""The Splunk HEC sink against a real loopback HEC receiver."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from urllib.parse import urlsplit

import pytest
import requests

from forwarder import retry
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.sinks import open_sink
from forwarder.sinks.hec import HecSink, endpoints, hec_time
from forwarder.sinks.settings import SinkSettings
from tests.receivers.hec import HecReceiver
from tests.sinks.helpers import only_rejection, sink_settings

T0 = 1_767_323_045_123_456  # 2026-01-02T03:04:05.123456Z
SECRET = "5ecret-hec-token-0123456789"


def ecs_event(n: int, pad: str = "") -> Event:
    event_id = hashlib.sha256(f"record {n}".encode()).hexdigest()
    body = {
        "@timestamp": "2026-01-02T03:04:05.123456Z",
        "event": {"id": event_id, "action": "user.login", "kind": "event"},
        "message": f"réglage nº{n} \u2603 {pad}",
        "emailauth": {"audit": {"changes": {"p": {"before": "none", "after": "reject"}}}},
    }
    # json.dumps' spaces and \u escapes: a sink that parsed and re-encoded the body would change its bytes
    return Event(event_id, T0 + n * 1_000_000, json.dumps(body).encode())


def cef_event(n: int) -> Event:
    event_id = hashlib.sha256(f"cef {n}".encode()).hexdigest()
    line = (
        f"CEF:0|Fortra|EmailAuth|v1|user.login|logged in|3|rt=1767323045123 cs1={event_id} cs1Label=eventId"
    )
    return Event(event_id, T0, line.encode(), is_json=False)


@pytest.fixture
def hec():
    with HecReceiver() as receiver:
        yield receiver


def sink_for(
    receiver: HecReceiver,
    token: str | None = None,
    attempts: int = 5,
    sleep: retry.Sleep = retry.sleep,
    **settings,
) -> HecSink:
    config = sink_settings(uri=receiver.url, token=token or receiver.token, **settings)
    policy = retry.RetryPolicy(attempts=attempts, sleep=sleep)
    return HecSink(config, retry_policy=policy, ack_timeout_seconds=30)


# --- delivery -------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_gzip", [True, False])
def test_batch_arrives_intact_with_bodies_byte_identical(hec, use_gzip):
    events = [ecs_event(n) for n in range(5)] + [cef_event(0)]

    result = sink_for(hec, gzip=use_gzip).send(events)

    assert (result.delivered, result.rejected) == (6, [])
    received = hec.received()
    assert hec.event_ids() == [event.id for event in events]
    for got, sent in zip(received[:5], events[:5]):
        assert got.raw.endswith(b'"event":' + sent.body + b"}")
        assert got.envelope["event"] == json.loads(sent.body)
    assert received[5].envelope["event"] == events[5].body.decode()
    (request,) = hec.seen()
    assert request.headers.get("content-encoding") == ("gzip" if use_gzip else None)
    assert request.headers["authorization"] == f"Splunk {hec.token}"


def test_metadata_fields_are_sent_and_unset_ones_left_out(hec):
    sink_for(hec, index="security", host="forwarder-1", source="src-a", sourcetype="st:b").send(
        [ecs_event(1)]
    )
    sink_for(hec).send([ecs_event(2)])

    configured, defaults = hec.events()
    assert {k: configured[k] for k in ("index", "host", "source", "sourcetype")} == {
        "index": "security",
        "host": "forwarder-1",
        "source": "src-a",
        "sourcetype": "st:b",
    }
    assert "index" not in defaults and "host" not in defaults
    assert (defaults["source"], defaults["sourcetype"]) == ("emailauth-audit-forwarder", "emailauth:audit")


def test_time_is_epoch_seconds_to_the_millisecond(hec):
    event = Event("a" * 64, 1_767_323_045_123_999, b'{"message":"x"}')

    sink_for(hec).send([event])

    (got,) = hec.received()
    assert got.envelope["time"] == 1767323045.123
    assert got.raw.startswith(b'{"time":1767323045.123,')


@pytest.mark.parametrize(
    ("time_us", "expected"),
    [(0, b"0.000"), (1_000_999, b"1.000"), (1_767_323_045_007_000, b"1767323045.007"), (-1_500, b"-0.002")],
)
def test_hec_time(time_us, expected):
    assert hec_time(time_us) == expected


def test_open_sink_builds_a_hec_sink_with_default_limits(hec):
    sink = open_sink(SinkSettings(uri=hec.url, token=hec.token))

    assert isinstance(sink, HecSink)
    assert (sink.max_batch_events, sink.max_batch_bytes) == (500, 900_000)
    assert sink.send([ecs_event(1)]).delivered == 1
    sink.close()


def test_a_batch_over_the_limits_goes_in_several_requests(hec):
    events = [ecs_event(n) for n in range(8)]

    sink_for(hec, batch_events=3, gzip=False).send(events)
    by_count = [request.wire_bytes for request in hec.seen()]
    one = len(hec.received()[0].raw)
    sink_for(hec, batch_bytes=2 * one + 2, gzip=False).send(events)  # batches() counts a newline each

    assert len(by_count) == 3
    assert [request.wire_bytes for request in hec.seen()[3:]] == [2 * one + 1] * 4
    assert hec.event_ids() == [event.id for event in events] * 2


# --- refusals -------------------------------------------------------------------------------------


def test_wrong_token_raises_with_hec_code_and_text_but_never_the_token(hec):
    sink = sink_for(hec, token=SECRET)

    with pytest.raises(SinkError) as caught:
        sink.send([ecs_event(1)])

    assert "Splunk HEC refused the batch: HTTP 403, code 4: Invalid token" in str(caught.value)
    assert not caught.value.retryable
    for text in (str(caught.value), repr(caught.value), repr(sink)):
        assert SECRET not in text
    assert hec.events() == []


def test_a_missing_or_malformed_token_is_a_configuration_error():
    with pytest.raises(ValueError, match="FORWARDER_SINK_TOKEN"):
        HecSink(SinkSettings(uri="hec+https://splunk.example.com:8088"))
    with pytest.raises(ValueError, match="FORWARDER_SINK_TOKEN") as caught:
        HecSink(SinkSettings(uri="hec+https://splunk.example.com:8088", token="abc\r\nX-Evil: 1"))
    assert "abc" not in str(caught.value)


@pytest.mark.parametrize(
    "uri",
    [
        "hec+http://splunk.example.com:8088",  # plain http off loopback
        "hec+https://splunk.example.com:8088/?token=abc",
        "hec+https://admin:pw@splunk.example.com:8088",
        "hec+https://",
    ],
)
def test_bad_uris_name_the_variable(uri):
    with pytest.raises(ValueError, match="FORWARDER_SINK") as caught:
        HecSink(SinkSettings(uri=uri, token=SECRET))
    assert "pw" not in str(caught.value)


@pytest.mark.parametrize(
    ("uri", "event_url", "ack_url"),
    [
        (
            "hec+https://s:8088",
            "https://s:8088/services/collector/event",
            "https://s:8088/services/collector/ack",
        ),
        ("hec+https://s/", "https://s/services/collector/event", "https://s/services/collector/ack"),
        (
            "hec+https://lb/splunk",
            "https://lb/splunk/services/collector/event",
            "https://lb/splunk/services/collector/ack",
        ),
        (
            "hec+https://lb/splunk/services/collector/event",
            "https://lb/splunk/services/collector/event",
            "https://lb/splunk/services/collector/ack",
        ),
        (
            "hec+http://127.0.0.1:1/services/collector",
            "http://127.0.0.1:1/services/collector",
            "http://127.0.0.1:1/services/collector/ack",
        ),
    ],
)
def test_endpoints(uri, event_url, ack_url):
    assert endpoints(urlsplit(uri)) == (event_url, ack_url)


@pytest.mark.parametrize("suffix", ["", "/services/collector/event"])
def test_a_path_prefix_reaches_hec_behind_a_load_balancer(suffix):
    with HecReceiver(prefix="/splunk", ack=True) as hec:
        sink = HecSink(sink_settings(uri=hec.url + suffix, token=hec.token, hec_ack=True))
        assert sink.send([ecs_event(1)]).delivered == 1
    assert hec.ack_answers() == [{"0": True}]


# --- retries --------------------------------------------------------------------------------------


def test_503_then_success_is_retried_with_backoff(hec, waits):
    events = [ecs_event(n) for n in range(3)]
    hec.fail_next(2)

    assert sink_for(hec, sleep=waits).send(events).delivered == 3

    assert len(waits) == 2
    assert [request.status for request in hec.seen()] == [503, 503, 200]
    assert hec.event_ids() == [event.id for event in events]


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(hec, waits, status):
    hec.fail_next(1, status=status, retry_after=7)

    sink_for(hec, sleep=waits).send([ecs_event(1)])

    assert waits == [7.0]


def test_exhausted_retries_raise_a_retryable_error(hec, waits):
    hec.fail_next(5)

    with pytest.raises(SinkError) as caught:
        sink_for(hec, attempts=3, sleep=waits).send([ecs_event(1)])

    assert caught.value.retryable
    assert "after 3 attempts: HTTP 503, code 9: Server is busy" in str(caught.value)
    assert len(waits) == 2
    assert hec.events() == []


def test_a_dropped_connection_is_retried(hec, waits):
    hec.drop_connection_next(1)

    assert sink_for(hec, sleep=waits).send([ecs_event(1)]).delivered == 1

    assert [request.status for request in hec.seen()] == [None, 200]
    assert len(waits) == 1


def test_a_connection_refused_ends_in_a_retryable_error(waits):
    with HecReceiver() as hec:
        settings = SinkSettings(uri=hec.url, token=SECRET)
    with pytest.raises(SinkError) as caught:
        HecSink(settings, retry_policy=retry.RetryPolicy(attempts=2, sleep=waits)).send([ecs_event(1)])
    assert caught.value.retryable
    assert SECRET not in str(caught.value)


def test_a_tls_failure_is_not_retried(hec, waits):
    settings = SinkSettings(uri=hec.url.replace("hec+http:", "hec+https:"), token=SECRET)

    with pytest.raises(SinkError, match="TLS") as caught:
        HecSink(settings, retry_policy=retry.RetryPolicy(sleep=waits)).send([ecs_event(1)])

    assert not caught.value.retryable
    assert waits == []


def test_a_response_lost_after_indexing_resends_the_same_ids(hec, waits):
    events = [ecs_event(n) for n in range(2)]
    hec.accept_then_fail_next(1)

    assert sink_for(hec, sleep=waits).send(events).delivered == 2

    assert hec.event_ids() == [event.id for event in events] * 2


# --- size limits ----------------------------------------------------------------------------------


def test_413_splits_the_request_until_it_fits():
    events = [ecs_event(n) for n in range(8)]
    envelope_size = 400  # each envelope is a little under this
    with HecReceiver(max_content_length=3 * envelope_size) as hec:
        result = HecSink(SinkSettings(uri=hec.url, token=hec.token, gzip=False)).send(events)

    assert (result.delivered, result.rejected) == (8, [])
    assert hec.event_ids() == [event.id for event in events]
    statuses = [request.status for request in hec.seen()]
    assert statuses.count(413) >= 3 and statuses.count(200) >= 3
    assert all(request.wire_bytes <= 3 * envelope_size for request in hec.seen() if request.status == 200)


@pytest.mark.parametrize("use_gzip", [True, False])
def test_an_event_refused_with_413_on_its_own_is_rejected(use_gzip):
    small, big, last = ecs_event(1), ecs_event(2, pad="x" * 3000), ecs_event(3)
    with HecReceiver(max_content_length=2000) as hec:
        result = HecSink(SinkSettings(uri=hec.url, token=hec.token, gzip=use_gzip)).send([small, big, last])

    assert "413" in only_rejection(result, big, delivered=2).reason
    assert hec.event_ids() == [small.id, last.id]


def test_an_envelope_over_the_batch_limit_is_rejected_without_sending(hec):
    small, big = ecs_event(1), ecs_event(2, pad="x" * 2000)

    result = sink_for(hec, batch_bytes=1000).send([small, big])

    reason = only_rejection(result, big, delivered=1).reason
    size = re.match(r"its HEC envelope is (\d+) bytes, over the 1000-byte batch limit$", reason)
    assert size and int(size.group(1)) > len(big.body)
    assert hec.event_ids() == [small.id]
    assert len(hec.seen()) == 1


# --- indexer acknowledgement ----------------------------------------------------------------------


def test_ack_mode_returns_only_once_every_request_is_acknowledged(waits):
    events = [ecs_event(n) for n in range(5)]
    with HecReceiver(ack=True, ack_delay_polls=2) as hec:
        sink = sink_for(hec, sleep=waits, hec_ack=True, batch_events=2)
        assert sink.send(events).delivered == 5

    assert hec.ack_answers() == [
        {"0": False, "1": False, "2": False},
        {"0": False, "1": False, "2": False},
        {"0": True, "1": True, "2": True},
    ]
    assert waits == [1.0, 2.0]
    assert {item.channel for item in hec.received()} == {sink.channel}


def test_an_ack_that_never_comes_raises_a_retryable_error(waits):
    with HecReceiver(ack=True, ack_delay_polls=None) as hec, pytest.raises(SinkError) as caught:
        sink_for(hec, sleep=waits, hec_ack=True).send([ecs_event(1)])

    assert caught.value.retryable
    assert "did not confirm indexing" in str(caught.value)
    assert sum(waits) == pytest.approx(30)


def test_ack_mode_against_a_token_without_ack_fails_clearly(hec):
    with pytest.raises(SinkError, match="no ackId") as caught:
        sink_for(hec, hec_ack=True).send([ecs_event(1)])
    assert not caught.value.retryable


def test_a_channel_is_sent_even_when_not_waiting_for_acks():
    with HecReceiver(ack=True) as hec:
        assert sink_for(hec).send([ecs_event(1)]).delivered == 1
    assert hec.ack_answers() == []


# --- the receiver speaks HEC ----------------------------------------------------------------------


def post(hec: HecReceiver, body: bytes, path: str = "/services/collector/event", **headers: str):
    headers.setdefault("Authorization", f"Splunk {hec.token}")
    response = requests.post(hec.http_url + path, data=body, headers=headers, timeout=10)
    return response.status_code, response.json()


@pytest.mark.parametrize(
    ("authorization", "status", "code"),
    [(None, 401, 2), ("Bearer x", 401, 3), ("Splunk wrong", 403, 4)],
)
def test_receiver_checks_the_token(hec, authorization, status, code):
    url = hec.http_url + "/services/collector/event"
    headers = {} if authorization is None else {"Authorization": authorization}
    response = requests.post(url, data=b'{"event":"x"}', headers=headers, timeout=10)
    assert (response.status_code, response.json()["code"]) == (status, code)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"", 5),
        (b'{"event":"a"} not json', 6),
        (b"[1, 2]", 6),
        (b'{"time":"noon","event":"a"}', 6),
        (b'{"host":1,"event":"a"}', 6),
        (b'{"event":"a"}{"time":1}', 12),
        (b'{"event":"  "}', 13),
        (b'{"event":null}', 13),
    ],
)
def test_receiver_refuses_malformed_bodies_like_hec(hec, body, code):
    status, reply = post(hec, body)
    assert (status, reply["code"]) == (400, code)
    assert hec.events() == []


def test_receiver_accepts_concatenated_gzipped_envelopes(hec):
    body = gzip.compress(b'{"time":"1.5","event":{"a":1}}\n\n {"event":"b"}')
    assert post(hec, body, **{"Content-Encoding": "gzip"}) == (200, {"text": "Success", "code": 0})
    assert [event["event"] for event in hec.events()] == [{"a": 1}, "b"]


def test_receiver_enforces_channels_when_ack_is_on():
    with HecReceiver(ack=True) as hec:
        assert post(hec, b'{"event":"a"}')[1]["code"] == 10
        assert post(hec, b'{"event":"a"}', **{"X-Splunk-Request-Channel": "nope"})[1]["code"] == 11
        channel = "11111111-2222-3333-4444-555555555555"
        assert post(hec, b'{"event":"a"}', **{"X-Splunk-Request-Channel": channel})[1]["ackId"] == 0
        ack = post(hec, b'{"acks":[0]}', "/services/collector/ack", **{"X-Splunk-Request-Channel": channel})
        assert ack == (200, {"acks": {"0": True}})
