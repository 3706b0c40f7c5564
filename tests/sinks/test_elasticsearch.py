"""The Elasticsearch sink against a protocol-faithful loopback ``_bulk`` receiver, and the index
template shipped in ``elasticsearch/``."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from forwarder import retry
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.normalize.ecs import to_ecs
from forwarder.records import parse_record
from forwarder.sim.generate import generate_org
from forwarder.sinks import open_sink
from forwarder.sinks.elasticsearch import ElasticsearchSink, bulk_url
from forwarder.sinks.settings import SinkSettings
from forwarder.timeutil import parse_iso
from tests.normalize import OPTIONS, golden_cases, golden_records
from tests.receivers.bulk import BulkReceiver, leaves
from tests.sinks.helpers import only_rejection, sink_settings

STREAM = "logs-emailauth.audit-default"
T0 = 1_767_323_045_123_456
TEMPLATES = Path(__file__).resolve().parents[2] / "elasticsearch"


def ecs_event(n: int, **extra: object) -> Event:
    event_id = hashlib.sha256(f"record {n}".encode()).hexdigest()
    body = {
        "@timestamp": "2026-01-02T03:04:05.123456Z",
        "event": {"id": event_id, "action": "user.login"},
        "message": f"réglage nº{n} \u2603",
        **extra,
    }
    return Event(event_id, T0 + n, json.dumps(body).encode())  # spaces and \u escapes: bytes must survive


@pytest.fixture
def es():
    with BulkReceiver() as receiver:
        yield receiver


def sink_for(
    receiver: BulkReceiver,
    token: str | None = None,
    attempts: int = 4,
    sleep: retry.Sleep = retry.sleep,
    **settings,
) -> ElasticsearchSink:
    config = sink_settings(uri=receiver.url, token=token or receiver.encoded_api_key(), **settings)
    return ElasticsearchSink(config, retry_policy=retry.RetryPolicy(attempts=attempts, sleep=sleep))


# --- delivery -------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_gzip", [True, False])
def test_creates_every_event_in_the_data_stream_with_its_id(es, waits, use_gzip):
    events = [ecs_event(n) for n in range(5)]

    result = sink_for(es, sleep=waits, gzip=use_gzip).send(events)

    assert (result.delivered, result.rejected) == (5, [])
    assert es.ids(STREAM) == [event.id for event in events]
    assert es.docs[STREAM][events[0].id] == json.loads(events[0].body)
    (request,) = es.seen()
    assert request.path == "/_bulk"  # the data stream is named in each action line
    assert request.headers.get("content-encoding") == ("gzip" if use_gzip else None)
    assert request.headers["content-type"] == "application/x-ndjson"
    assert es.statuses == [201] * 5
    assert waits == []


def test_source_lines_are_the_event_bytes(es):
    captured: list[bytes] = []
    original = es.answer

    def spy(method, target, headers, raw):
        captured.append(gzip.decompress(raw))
        return original(method, target, headers, raw)

    es.answer = spy
    events = [ecs_event(1), ecs_event(2)]
    sink_for(es).send(events)

    lines = captured[0].split(b"\n")
    assert lines[1::2][:2] == [event.body for event in events]
    assert json.loads(lines[0]) == {"create": {"_index": STREAM, "_id": events[0].id}}
    assert captured[0].endswith(b"\n")


def test_a_resent_batch_is_indexed_once_and_counts_as_delivered(es):
    events = [ecs_event(n) for n in range(4)]
    sink = sink_for(es)
    sink.send(events[:2])

    result = sink.send(events)

    assert (result.delivered, result.rejected) == (4, [])
    assert sorted(es.ids(STREAM)) == sorted(event.id for event in events)
    assert es.statuses[2:] == [409, 409, 201, 201]


def test_a_lost_response_is_retried_and_the_events_stay_single(es, waits):
    es.accept_then_fail_next(1)
    events = [ecs_event(n) for n in range(3)]

    assert sink_for(es, sleep=waits).send(events).delivered == 3

    assert len(es.ids(STREAM)) == 3
    assert es.statuses == [201] * 3 + [409] * 3
    assert len(waits) == 1


def test_a_text_event_is_wrapped_with_timestamp_and_id(es):
    line = "CEF:0|Fortra|EmailAuth|v1|user.login|logged in|3|rt=1"
    event = Event("c" * 64, T0, line.encode(), is_json=False)

    sink_for(es).send([event])

    assert es.docs[STREAM]["c" * 64] == {
        "@timestamp": "2026-01-02T03:04:05.123456Z",
        "event": {"id": "c" * 64},
        "message": line,
    }


def test_requests_are_bounded_by_bytes_of_action_and_source(es):
    events = [ecs_event(n) for n in range(6)]
    action = {"create": {"_index": STREAM, "_id": events[0].id}}
    one = len(json.dumps(action, separators=(",", ":"))) + len(events[0].body) + 2

    sink_for(es, batch_bytes=2 * one + 2, gzip=False).send(events)  # batches() adds 1 per item

    assert len(es.seen()) == 3
    assert all(request.wire_bytes <= 2 * one for request in es.seen())
    assert len(es.ids(STREAM)) == 6


def test_namespace_names_the_data_stream(es):
    sink_for(es, es_namespace="prod_eu").send([ecs_event(1)])

    assert es.ids("logs-emailauth.audit-prod_eu") == [ecs_event(1).id]


# --- per-item results -----------------------------------------------------------------------------


def test_mapping_errors_become_rejections_with_the_reason(es):
    good = [ecs_event(n) for n in range(3)]
    sink_for(es).send(good[:1])  # maps "message" as keyword and "event" as an object
    bad = ecs_event(9, event="not an object")

    result = sink_for(es).send([good[1], bad, good[2]])

    assert result.delivered == 2
    (rejection,) = result.rejected
    assert rejection.event is bad
    assert "document_parsing_exception" in rejection.reason and "[event]" in rejection.reason
    assert sorted(es.ids(STREAM)) == sorted(e.id for e in good)


def test_a_document_without_timestamp_is_rejected_by_the_data_stream(es):
    event = Event("d" * 64, T0, b'{"message":"no time"}')

    result = sink_for(es).send([event, ecs_event(1)])

    assert [r.event.id for r in result.rejected] == ["d" * 64]
    assert "@timestamp" in result.rejected[0].reason


def test_throttled_items_alone_are_sent_again(es, waits):
    es.throttle_items(2)
    events = [ecs_event(n) for n in range(5)]

    result = sink_for(es, sleep=waits).send(events)

    assert (result.delivered, result.rejected) == (5, [])
    assert es.statuses == [429, 429, 201, 201, 201, 201, 201]
    assert sorted(es.ids(STREAM)) == sorted(e.id for e in events)
    assert len(waits) == 1


def test_items_throttled_past_the_attempts_raise_retryable(es, waits):
    es.throttle_items(100)

    with pytest.raises(SinkError) as caught:
        sink_for(es, sleep=waits, attempts=3).send([ecs_event(1), ecs_event(2)])

    assert caught.value.retryable
    assert "429" in str(caught.value)
    assert len(waits) == 2


# --- size -----------------------------------------------------------------------------------------


def test_413_splits_the_request_and_rejects_an_event_too_large_alone(waits):
    big = ecs_event(99, pad="x" * 6000)
    events = [ecs_event(n) for n in range(4)] + [big]
    with BulkReceiver(max_content_length=3000) as es:
        result = sink_for(es, sleep=waits, gzip=False).send(events)

        assert "413" in only_rejection(result, big, delivered=4).reason
        assert sorted(es.ids(STREAM)) == sorted(e.id for e in events[:4])
        assert 413 in [request.status for request in es.seen()]


# --- auth and refusals ----------------------------------------------------------------------------


def test_auth_forms(es):
    key_id, key = next(iter(es.api_keys.items()))
    user, password = next(iter(es.users.items()))

    sink_for(es, token=f"{key_id}:{key}").send([ecs_event(1)])
    sink_for(es, token=f"{user}:{password}", auth="basic").send([ecs_event(2)])

    kinds = [request.headers["authorization"].split()[0] for request in es.seen()]
    assert kinds == ["ApiKey", "Basic"]
    assert len(es.ids(STREAM)) == 2


def test_a_document_refused_for_privileges_names_the_token_to_check(es, waits):
    es.privileges = {"auto_configure"}
    with pytest.raises(SinkError) as caught:
        sink_for(es, sleep=waits).send([ecs_event(1)])
    assert str(caught.value).startswith("Elasticsearch refused a document with HTTP 403: security_exception")
    assert str(caught.value).endswith("; check FORWARDER_SINK_TOKEN and what it is allowed to write")


def test_a_wrong_key_raises_without_the_key(es, waits):
    secret = base64.b64encode(b"key-id-1:wrong-secret-value").decode()

    with pytest.raises(SinkError) as caught:
        sink_for(es, sleep=waits, token=secret).send([ecs_event(1)])

    assert not caught.value.retryable
    assert "security_exception" in str(caught.value) and "401" in str(caught.value)
    assert secret not in str(caught.value) and secret not in repr(sink_for(es, token=secret))
    assert waits == []


def test_busy_cluster_is_retried_with_retry_after(es, waits):
    es.fail_next(2, status=429, retry_after=3)

    assert sink_for(es, sleep=waits).send([ecs_event(1)]).delivered == 1

    assert waits == [3.0, 3.0]


@pytest.mark.parametrize(
    ("uri", "namespace", "problem"),
    [
        ("elasticsearch+http://es.example.com:9200", "default", "loopback"),
        ("elasticsearch+https://es.example.com:9200?x=1", "default", "query"),
        ("elasticsearch+https://es.example.com:9200", "Has-Dash", "namespace"),
    ],
)
def test_bad_configuration_is_refused(uri, namespace, problem):
    with pytest.raises(ValueError, match=problem):
        bulk_url(urlsplit(uri), namespace)


def test_missing_token_is_refused():
    with pytest.raises(ValueError, match="FORWARDER_SINK_TOKEN"):
        ElasticsearchSink(SinkSettings(uri="elasticsearch+https://es.example.com"))


def test_registry_opens_elasticsearch_and_opensearch(es):
    assert bulk_url(urlsplit("opensearch+https://os.example.com/proxy/"), "default") == (
        "https://os.example.com/proxy/_bulk"
    )
    sink = open_sink(SinkSettings(uri=es.url, token=es.encoded_api_key()))
    assert isinstance(sink, ElasticsearchSink) and sink.send([ecs_event(1)]).delivered == 1
    sink.close()


# --- the index template ---------------------------------------------------------------------------


def mapped_paths(properties: dict, prefix: str = "") -> dict[str, str]:
    found: dict[str, str] = {}
    for name, spec in properties.items():
        if "properties" in spec:
            found.update(mapped_paths(spec["properties"], f"{prefix}{name}."))
        else:
            found[f"{prefix}{name}"] = spec["type"]
    return found


def emitted_ecs_paths() -> set[str]:
    """Every leaf the ECS normalizer writes for the golden cases and a whole simulated organization."""
    records = [record for case in golden_cases() for record in golden_records(case)]
    org = generate_org(7, parse_iso("2026-03-01T12:00:00Z"))
    records += [parse_record(raw, raw["filterable_action"].partition(".")[0]) for raw in org.all_records()]
    return {
        path
        for record in records
        for path, value in leaves(to_ecs(record, OPTIONS))
        if not isinstance(value, dict)
    }


def test_template_maps_every_ecs_field_the_normalizer_emits():
    ecs = json.loads((TEMPLATES / "component_template_ecs.json").read_text())
    custom = json.loads((TEMPLATES / "component_template_emailauth.json").read_text())
    index = json.loads((TEMPLATES / "index_template.json").read_text())
    mapped = mapped_paths(ecs["template"]["mappings"]["properties"])
    emitted = emitted_ecs_paths()

    assert emitted, "no golden records"
    unmapped = {path for path in emitted if path not in mapped and not path.startswith("emailauth.")}
    assert unmapped == set()
    assert mapped["@timestamp"] == "date" and mapped["event.created"] == "date"
    assert custom["template"]["mappings"]["date_detection"] is False
    assert index["template"]["mappings"]["date_detection"] is False
    assert index["index_patterns"] == ["logs-emailauth.audit-*"] and "data_stream" in index
    rules = [next(iter(rule.values())) for rule in custom["template"]["mappings"]["dynamic_templates"]]
    assert {rule["match_mapping_type"] for rule in rules} == {"string", "long", "double", "boolean"}
    assert all(rule["path_match"] == "emailauth.*" for rule in rules)
