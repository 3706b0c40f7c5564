"""The Google SecOps sink against the loopback fake of Google's token endpoint and the Chronicle API
(tests/receivers/secops.py): service-account auth, batches within the request limit, the split of a
refused import down to the bad event, retries, the probe, and no secret in anything it says."""

from __future__ import annotations

import json
import logging
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder import logs, retry
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.sinks import probe_sink, sink_problems
from forwarder.sinks.secops import REQUEST_LIMIT, SecOpsSink, endpoint
from forwarder.sinks.settings import SinkSettings
from tests.receivers.secops import INSTANCE, PROJECT, REGION, SecOpsFake
from tests.receivers.udm_checks import udm_problem
from tests.sinks.helpers import sink_settings


@pytest.fixture
def fake():
    with SecOpsFake() as server:
        yield server


def settings_for(fake, tmp_path, **extra):
    values = {
        "uri": fake.url,
        "secops_project": PROJECT,
        "secops_region": REGION,
        "secops_instance": INSTANCE,
        "secops_credentials": str(fake.key_file(tmp_path)),
        **extra,
    }
    return sink_settings(**values)


def paced_sink(settings: SinkSettings, sleep: retry.Sleep) -> SecOpsSink:
    """The sink of ``settings``, its FORWARDER_MAX_ATTEMPTS tries waiting in ``sleep``."""
    return SecOpsSink(settings, retry.RetryPolicy(attempts=settings.max_attempts, sleep=sleep))


def udm_event(n: int, size: int = 0, kind: str = "USER_LOGIN") -> Event:
    doc = {
        "metadata": {
            "event_timestamp": "2026-11-01T10:00:00Z",
            "event_type": kind,
            "product_log_id": f"id-{n:06d}",
            "description": "x" * size,
        },
        "principal": {"user": {"userid": "a@example.com"}},
        "target": {"user": {"userid": "a@example.com"}},
        "extensions": {"auth": {"type": "AUTHTYPE_UNSPECIFIED"}},
    }
    return Event(f"id-{n:06d}", 0, json.dumps(doc).encode())


def secret_texts(fake, tmp_path):
    """Everything secret the sink knows: the key file, its private key, the tokens issued so far."""
    key = fake.key_document()
    pem_lines = [line for line in key["private_key"].splitlines() if "-----" not in line and line]
    return [(tmp_path / "secops-key.json").read_text(), key["private_key"], *pem_lines, *fake.issued()]


def test_events_are_imported_with_a_token_asked_once(fake, tmp_path):
    sink = SecOpsSink(settings_for(fake, tmp_path))
    try:
        first = sink.send([udm_event(n) for n in range(10)])
        second = sink.send([udm_event(n) for n in range(10, 15)])
    finally:
        sink.close()
    assert (first.delivered, first.rejected, second.delivered) == (10, [], 5)
    assert fake.ids() == [f"id-{n:06d}" for n in range(15)]
    assert fake.token_requests == 1 and fake.imports == 2


def test_a_token_past_its_life_is_renewed(tmp_path):
    with SecOpsFake(token_seconds=30) as fake:  # under the minute kept in hand: renewed every time
        sink = SecOpsSink(settings_for(fake, tmp_path))
        sink.send([udm_event(1)])
        sink.send([udm_event(2)])
        sink.close()
        assert fake.token_requests == 2 and len(fake.ids()) == 2


def test_a_revoked_token_is_replaced_once_and_the_batch_goes_through(fake, tmp_path):
    sink = SecOpsSink(settings_for(fake, tmp_path))
    sink.send([udm_event(1)])
    fake.revoke_tokens()
    result = sink.send([udm_event(2)])
    sink.close()
    assert result.delivered == 1 and fake.ids() == ["id-000001", "id-000002"]
    assert fake.token_requests == 2


def test_a_token_endpoint_that_fails_for_a_while_is_retried(fake, tmp_path, waits):
    fake.fail_token_next(2, status=503)
    sink = paced_sink(settings_for(fake, tmp_path), waits)
    result = sink.send([udm_event(1)])
    sink.close()
    assert result.delivered == 1 and fake.token_requests == 3 and len(waits) == 2


def test_tokens_the_api_keeps_refusing_stop_the_batch_naming_the_key(fake, tmp_path):
    fake.tokens_accepted = False  # a key whose account lost its access after the token was issued
    sink = SecOpsSink(settings_for(fake, tmp_path))
    with pytest.raises(SinkError) as caught:
        sink.send([udm_event(1)])
    sink.close()
    assert str(caught.value) == (
        "Google SecOps refused the import: HTTP 401 UNAUTHENTICATED: Request had invalid authentication "
        "credentials.; check FORWARDER_SECOPS_CREDENTIALS"
    )
    assert fake.token_requests == 2 and fake.ids() == []


def test_no_request_exceeds_the_limit_and_an_event_too_large_alone_is_rejected_unsent(fake, tmp_path):
    # asked for more than the API takes
    sink = SecOpsSink(settings_for(fake, tmp_path, batch_bytes=5_000_000))
    assert sink.max_batch_bytes < REQUEST_LIMIT
    events = [udm_event(n, size=90_000) for n in range(40)] + [udm_event(99, size=REQUEST_LIMIT)]
    result = sink.send(events)
    sink.close()
    assert result.delivered == 40 and [r.event.id for r in result.rejected] == ["id-000099"]
    assert "over the" in result.rejected[0].reason
    assert fake.oversized == 0 and 0 < fake.largest_request <= REQUEST_LIMIT
    assert fake.imports >= 4  # 40 events of ~90 kB cannot go in fewer requests of 1 MB
    assert sorted(fake.ids()) == sorted(e.id for e in events[:40])


def test_a_text_event_is_rejected_unsent(fake, tmp_path):
    sink = SecOpsSink(settings_for(fake, tmp_path))
    result = sink.send([udm_event(1), Event("cef-1", 0, b"CEF:0|Fortra|x|v1|a|b|3|", is_json=False)])
    sink.close()
    assert result.delivered == 1 and fake.ids() == ["id-000001"]
    assert [(r.event.id, r.reason) for r in result.rejected] == [
        ("cef-1", "Google SecOps imports UDM events: this event is not JSON")
    ]


def test_a_refused_import_is_split_down_to_the_bad_event(fake, tmp_path):
    fake.poisoned = {"id-000013"}
    events = [udm_event(n) for n in range(32)] + [udm_event(40, kind="NOT_A_TYPE")]
    sink = SecOpsSink(settings_for(fake, tmp_path))
    result = sink.send(events)
    sink.close()
    assert sorted(r.event.id for r in result.rejected) == ["id-000013", "id-000040"]
    reasons = {r.event.id: r.reason for r in result.rejected}
    assert reasons["id-000040"] == (
        "Google SecOps refused the event: HTTP 400 INVALID_ARGUMENT: events[0]: invalid "
        "metadata.event_type: 'NOT_A_TYPE'"
    )
    assert result.delivered == 31 and sorted(fake.ids()) == sorted(
        e.id for e in events[:32] if e.id != "id-000013"
    )
    assert len(fake.ids()) == 31  # each accepted event once, however the batch was split
    assert fake.imports <= 2 * 2 * 6 + 1  # a bisection per bad event, not one request per event


def test_throttling_and_server_errors_are_retried(fake, tmp_path, waits):
    fake.fail_next(2, status=429, retry_after=7)
    fake.fail_next(1, status=503)
    sink = paced_sink(settings_for(fake, tmp_path), waits)
    result = sink.send([udm_event(n) for n in range(5)])
    sink.close()
    assert result.delivered == 5 and len(fake.ids()) == 5
    assert waits[:2] == [7.0, 7.0] and len(waits) == 3


def test_attempts_running_out_is_a_retryable_error(fake, tmp_path, waits):
    fake.fail_next(10, status=503)
    sink = paced_sink(settings_for(fake, tmp_path, max_attempts=3), waits)
    with pytest.raises(SinkError) as caught:
        sink.send([udm_event(1)])
    sink.close()
    assert caught.value.retryable and "still failing after 3 attempts: HTTP 503 UNAVAILABLE" in str(
        caught.value
    )
    assert fake.ids() == []


def test_a_permission_refusal_raises_naming_what_to_check(fake, tmp_path):
    sink = SecOpsSink(settings_for(fake, tmp_path, secops_instance="00000000-0000-0000-0000-000000000000"))
    with pytest.raises(SinkError) as caught:
        sink.send([udm_event(1)])
    sink.close()
    assert not caught.value.retryable
    assert "HTTP 404 NOT_FOUND" in str(caught.value) and "FORWARDER_SECOPS_INSTANCE" in str(caught.value)


def test_the_probe_authenticates_and_finds_the_instance_without_sending(fake, tmp_path):
    line = probe_sink(settings_for(fake, tmp_path))
    assert line == (
        f"Google SecOps at 127.0.0.1:{fake.port}: token issued to "
        f"forwarder@emailauth-secops.iam.gserviceaccount.com; instance "
        f"projects/{PROJECT}/locations/{REGION}/instances/{INSTANCE} found"
    )
    assert fake.imports == 0 and fake.ids() == []


def test_a_probe_with_a_key_google_does_not_know_says_what_to_check(fake, tmp_path):
    other = SecOpsFake()  # never started: only its key is used, which the running fake rejects
    document = {**other.key_document(), "token_uri": fake.token_uri}
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SinkError) as caught:
        probe_sink(settings_for(fake, tmp_path, secops_credentials=str(path)))
    message = str(caught.value)
    assert message.startswith("Google refused the service account's token request: HTTP 400 invalid_grant")
    assert "FORWARDER_SECOPS_CREDENTIALS" in message
    assert document["private_key"] not in message


def test_no_secret_reaches_errors_reprs_or_logs(fake, tmp_path, waits, caplog):
    caplog.set_level(logging.DEBUG)
    sink = paced_sink(settings_for(fake, tmp_path, max_attempts=2), waits)
    sink.send([udm_event(1)])
    fake.fail_next(5, status=503)
    with pytest.raises(SinkError) as caught:
        sink.send([udm_event(2)])
    sink.close()
    said = "\n".join([str(caught.value), repr(sink), repr(sink._tokens), repr(sink._tokens.key)])
    said += "\n" + "\n".join(logs.redact(record.getMessage()) for record in caplog.records)
    for secret in secret_texts(fake, tmp_path):
        assert secret not in said
        assert logs.redact(f"x {secret} y") == f"x {logs.MASK} y"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"uri": "secops+http://chronicle.us.rep.googleapis.com"}, "plain http is allowed for loopback"),
        ({"uri": "secops+https://chronicle.us.rep.googleapis.com/v1/x"}, "no path or query"),
        ({"secops_project": None}, "FORWARDER_SECOPS_PROJECT is required"),
        ({"secops_region": "us/../eu"}, "FORWARDER_SECOPS_REGION"),
        ({"secops_instance": ""}, "FORWARDER_SECOPS_INSTANCE is required"),
        ({"secops_credentials": None}, "FORWARDER_SECOPS_CREDENTIALS is required"),
    ],
)
def test_configuration_problems_name_their_variable(change, problem):
    base = {
        "uri": "secops+https://chronicle.us.rep.googleapis.com",
        "secops_project": PROJECT,
        "secops_region": REGION,
        "secops_instance": INSTANCE,
        "secops_credentials": "/etc/forwarder/key.json",
    }
    found = sink_problems(sink_settings(**{**base, **change}), "udm")
    assert len(found) == 1 and problem in found[0]


def test_only_udm_events_go_to_secops():
    base = sink_settings(uri="secops+https://chronicle.eu.rep.googleapis.com", secops_project="p",
                         secops_region="eu", secops_instance="i", secops_credentials="/k.json")  # fmt: skip
    assert sink_problems(base, "udm") == []
    assert sink_problems(base, "ecs") == [
        "FORWARDER_FORMAT: the Google SecOps sink imports UDM events: set FORWARDER_FORMAT=udm (got 'ecs')"
    ]


def test_the_endpoint_is_the_regional_host():
    assert endpoint(urlsplit("secops+https://chronicle.europe-west2.rep.googleapis.com")) == (
        "https://chronicle.europe-west2.rep.googleapis.com"
    )


def test_the_fake_refuses_what_the_service_refuses():
    assert udm_problem(
        {"metadata": {"event_timestamp": "2026-11-01T10:00:00Z", "event_type": "USER_LOGIN"}}
    ) == ("USER_LOGIN requires target.user")
    assert "Unknown name" in udm_problem({"metadata": {}, "emailauth": {}})
    assert "event_timestamp" in udm_problem({"metadata": {"event_timestamp": "yesterday"}})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 300_000), min_size=1, max_size=30),
    poison=st.sets(st.integers(0, 29), max_size=4),
    faults=st.lists(st.sampled_from([429, 500, 503]), max_size=3),
    batch_events=st.integers(1, 12),
)
def test_whatever_is_refused_or_throttled_each_event_is_imported_once_or_rejected(
    fake, tmp_path, waits, sizes, poison, faults, batch_events
):
    """Refusals (bad events anywhere), throttling and server errors, any batch shape: every event is
    imported exactly once or rejected, only bad events (or one over the limit) are rejected, and no
    request exceeds the limit."""
    with fake.lock:
        fake.events.clear()
        fake.largest_request = fake.oversized = 0
    events = [udm_event(n, size=size) for n, size in enumerate(sizes)]
    fake.poisoned = {events[n].id for n in poison if n < len(events)}
    for status in faults:
        fake.fail_next(1, status=status)
    sink = paced_sink(settings_for(fake, tmp_path, batch_events=batch_events), waits)
    try:
        result = sink.send(events)
    finally:
        sink.close()
    too_large = {e.id for e in events if len(e.body) + 8 > sink.max_batch_bytes}
    rejected = [r.event.id for r in result.rejected]
    assert sorted(rejected) == sorted(fake.poisoned | too_large)
    assert sorted(fake.ids()) == sorted(e.id for e in events if e.id not in set(rejected))
    assert result.delivered == len(events) - len(rejected)
    assert fake.oversized == 0 and fake.largest_request <= REQUEST_LIMIT


def test_the_key_can_come_from_secrets_manager_and_is_masked(fake, tmp_path, aws):
    import boto3

    from forwarder import credentials

    document = json.dumps(fake.key_document())
    boto3.client("secretsmanager").create_secret(Name="emailauth/secops-key", SecretString=document)
    credentials.forget()
    line = probe_sink(settings_for(fake, tmp_path, secops_credentials="secretsmanager:emailauth/secops-key"))
    assert line.endswith("found")
    assert logs.redact(document) == logs.MASK
    with pytest.raises(SinkError) as caught:
        probe_sink(settings_for(fake, tmp_path, secops_credentials="secretsmanager:emailauth/nothing-here"))
    assert str(caught.value).startswith("FORWARDER_SECOPS_CREDENTIALS: cannot read secretsmanager:emailauth/")


def test_a_200_that_is_not_the_apis_reply_proves_nothing(fake, tmp_path, waits, monkeypatch):
    monkeypatch.setattr(fake, "_import", lambda headers, raw: (200, b"OK", {"Content-Type": "text/plain"}))
    sink = paced_sink(settings_for(fake, tmp_path, max_attempts=2), waits)
    with pytest.raises(SinkError) as caught:
        sink.send([udm_event(1)])
    sink.close()
    assert caught.value.retryable and "not the JSON reply of an accepted import" in str(caught.value)
