"""The Microsoft Sentinel sink against the loopback Entra ID and Logs Ingestion fake
(tests/receivers/sentinel.py): rows, tokens, size limits, retries, refusals, the probe, secrets; and
as a property, every event stored once or rejected whatever splits, throttles or revokes."""

from __future__ import annotations

import hashlib
import json
import random
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder import retry
from forwarder.config import load_settings
from forwarder.errors import ConfigError, SinkError
from forwarder.events import Event
from forwarder.sinks import open_sink, probe_sink, sink_problems
from forwarder.sinks.sentinel import MAX_REQUEST_BYTES, SentinelOptions, SentinelSink, row
from forwarder.sinks.settings import SinkSettings
from forwarder.timeutil import format_us
from tests.receivers.sentinel import CLIENT_ID, CLIENT_SECRET, RULE_ID, STREAM, TENANT, SentinelReceiver
from tests.sinks.helpers import only_rejection, sink_settings

TIME_US = 1_767_323_045_123_456


def event(n: int, pad: str = "") -> Event:
    event_id = hashlib.sha256(f"r{n}".encode()).hexdigest()
    body = {"@timestamp": format_us(TIME_US + n), "event": {"id": event_id}, "message": f"nº{n} {pad}"}
    return Event(event_id, TIME_US + n, json.dumps(body).encode())


def settings_for(fake: SentinelReceiver, **changes) -> SinkSettings:
    values = dict(
        uri=fake.sink_uri,
        sentinel_rule_id=RULE_ID,
        azure_tenant_id=TENANT,
        azure_client_id=CLIENT_ID,
        azure_client_secret=CLIENT_SECRET,
        azure_authority=fake.base_url,
    )
    values.update(changes)
    return sink_settings(**values)


def sink_for(
    fake: SentinelReceiver, attempts: int = 4, sleep: retry.Sleep = retry.sleep, **changes
) -> SentinelSink:
    policy = retry.RetryPolicy(attempts=attempts, sleep=sleep)
    return SentinelSink(settings_for(fake, **changes), retry_policy=policy)


def noise(n: int, seed: int) -> str:
    """Text gzip cannot shrink much: requests then near the limit compressed, too."""
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


@pytest.mark.parametrize("use_gzip", [True, False])
def test_rows_carry_the_time_the_id_and_the_event_byte_for_byte(use_gzip):
    events = [event(n) for n in range(5)]
    with SentinelReceiver() as fake:
        result = sink_for(fake, gzip=use_gzip).send(events)

        assert (result.delivered, result.rejected) == (5, [])
        assert fake.rows() == [
            {"TimeGenerated": format_us(e.time_us), "EventId": e.id, "Ecs": json.loads(e.body)}
            for e in events
        ]
        token, upload = fake.seen()
        assert token.path == f"/{TENANT}/oauth2/v2.0/token"
        assert upload.path == f"/dataCollectionRules/{RULE_ID}/streams/{STREAM}"
        assert upload.status == 204
        assert upload.headers["content-type"] == "application/json"
        assert upload.headers.get("content-encoding") == ("gzip" if use_gzip else None)


def test_a_row_embeds_the_event_as_it_is():
    body = b'{"event":{"id":"x"},"message":"a \\u2603 \\"quoted\\""}'
    assert row(Event("x", 0, body)) == (
        b'{"TimeGenerated":"1970-01-01T00:00:00.000000Z","EventId":"x","Ecs":' + body + b"}"
    )


def test_the_token_is_kept_until_it_expires_and_asked_again_after():
    with SentinelReceiver() as fake:
        sink = sink_for(fake)
        for n in range(3):
            sink.send([event(n)])
        assert fake.token_requests == 1

    now = [1_000_000.0]
    with SentinelReceiver() as fake:
        sink = SentinelSink(settings_for(fake), clock=lambda: now[0])
        sink.send([event(1)])
        now[0] += 3599 - 300  # the token's lifetime less the margin kept: it would expire in flight
        sink.send([event(2)])
        assert fake.token_requests == 2
        assert len(fake.rows()) == 2


def test_a_token_refused_with_401_is_replaced_once_and_the_batch_goes_through():
    with SentinelReceiver() as fake:
        sink = sink_for(fake)
        sink.send([event(1)])
        fake.revoke_tokens()

        assert sink.send([event(2)]).delivered == 1
        assert fake.token_requests == 2
        assert [s.status for s in fake.seen() if s.path.startswith("/dataCollection")] == [204, 401, 204]


def test_429_waits_as_long_as_retry_after_says(waits):
    with SentinelReceiver() as fake:
        sink = sink_for(fake, sleep=waits)
        sink.send([event(0)])  # the token first
        fake.fail_next(2, status=429, retry_after=7)

        assert sink.send([event(1)]).delivered == 1
        assert waits == [7.0, 7.0]
        assert [r["EventId"] for r in fake.rows()] == [event(0).id, event(1).id]


def test_5xx_until_the_attempts_run_out_is_a_retryable_failure_and_nothing_counts(waits):
    with SentinelReceiver() as fake:
        sink = sink_for(fake, sleep=waits, attempts=3)
        sink.send([event(0)])
        fake.fail_next(3, status=503)

        with pytest.raises(SinkError) as caught:
            sink.send([event(1)])
        assert caught.value.retryable
        assert "still failing after 3 attempts: HTTP 503: ServiceUnavailable: injected" in str(caught.value)
        assert len(fake.rows()) == 1


@pytest.mark.parametrize("status", [200, 202])
def test_a_2xx_that_is_not_204_proves_nothing(waits, status):
    with SentinelReceiver() as fake:
        sink = sink_for(fake, sleep=waits)
        sink.send([event(0)])
        fake.fail_next(1, status=status)
        with pytest.raises(SinkError, match="not the service's 204 No Content; nothing counts") as caught:
            sink.send([event(1)])
        assert caught.value.retryable


@pytest.mark.parametrize("use_gzip", [True, False])
def test_no_request_is_over_the_limit_compressed_or_not(use_gzip):
    events = [event(n, noise(90_000, n)) for n in range(40)]  # 3.6 MB, hardly compressible
    with SentinelReceiver() as fake:
        result = sink_for(fake, gzip=use_gzip, batch_events=10_000).send(events)

        assert (result.delivered, result.rejected) == (40, [])
        assert sorted(r["EventId"] for r in fake.rows()) == sorted(e.id for e in events)
        assert max(fake.uploads) <= MAX_REQUEST_BYTES and max(fake.wire_sizes) <= MAX_REQUEST_BYTES
        assert len(fake.uploads) >= 4  # filled close to the limit, not one row a request
        assert all(s.status == 204 for s in fake.seen() if s.path.startswith("/dataCollection"))


def test_batch_bytes_may_lower_the_limit_never_raise_it():
    with SentinelReceiver() as fake:
        assert sink_for(fake, batch_bytes=50_000_000).max_batch_bytes == MAX_REQUEST_BYTES
        assert sink_for(fake, batch_bytes=200_000).max_batch_bytes == 200_000


def test_a_row_over_the_limit_alone_is_rejected_unsent():
    big = event(99, "x" * MAX_REQUEST_BYTES)
    with SentinelReceiver() as fake:
        result = sink_for(fake).send([event(1), big, event(2)])

        rejection = only_rejection(result, big, delivered=2)
        assert "over the 999998-byte Logs Ingestion API request limit" in rejection.reason
        assert big.id not in [r["EventId"] for r in fake.rows()]
        assert max(fake.wire_sizes) < 10_000


def test_413_splits_the_request_until_the_service_takes_it():
    events = [event(n, "y" * 30_000) for n in range(12)]
    with SentinelReceiver(max_request_bytes=100_000) as fake:  # a service stricter than its docs
        result = sink_for(fake, gzip=False).send(events)

        assert (result.delivered, result.rejected) == (12, [])
        assert sorted(r["EventId"] for r in fake.rows()) == sorted(e.id for e in events)
        assert 413 in [s.status for s in fake.seen()]


def test_a_wrong_client_secret_names_the_settings_and_never_shows_the_secret():
    with SentinelReceiver() as fake:
        wrong = "Wr0ng~secret.value_9876543210"
        with pytest.raises(SinkError) as caught:
            sink_for(fake, azure_client_secret=wrong).send([event(1)])
        message = str(caught.value)
        assert message.startswith(
            "Microsoft Entra ID refused the client credentials: HTTP 401: invalid_client: "
        )
        assert "FORWARDER_AZURE_CLIENT_SECRET" in message and wrong not in message
        assert not caught.value.retryable
        assert fake.rows() == []


@pytest.mark.parametrize(
    ("change", "status", "hint"),
    [
        ({"sentinel_rule_id": "dcr-ffffffffffffffffffffffffffffffff"}, 404, "FORWARDER_SENTINEL_RULE_ID"),
        ({"sentinel_stream": "Custom-Other_CL"}, 404, "FORWARDER_SENTINEL_STREAM"),
    ],
)
def test_refusals_name_what_to_check(change, status, hint):
    with SentinelReceiver() as fake:
        with pytest.raises(SinkError) as caught:
            sink_for(fake, **change).send([event(1)])
        assert f"refused the batch: HTTP {status}" in str(caught.value) and hint in str(caught.value)
        assert not caught.value.retryable


def test_the_probe_authenticates_and_reaches_the_stream_without_storing_a_row():
    with SentinelReceiver() as fake:
        line = probe_sink(settings_for(fake))

        assert line == (
            f"Microsoft Sentinel at 127.0.0.1:{fake.port}: token from Microsoft Entra ID "
            f"(127.0.0.1:{fake.port}); an upload of no rows to {RULE_ID}/streams/{STREAM} got HTTP 204"
        )
        assert fake.rows() == []
        assert [s.status for s in fake.seen()] == [200, 204]


def test_the_probe_fails_on_a_wrong_secret_and_on_a_wrong_rule():
    with SentinelReceiver() as fake:
        with pytest.raises(SinkError, match="check FORWARDER_AZURE_TENANT_ID, FORWARDER_AZURE_CLIENT_ID"):
            probe_sink(settings_for(fake, azure_client_secret="not-the-secret"))
        with pytest.raises(SinkError, match=r"refused an empty upload: HTTP 404.*FORWARDER_SENTINEL_RULE_ID"):
            probe_sink(settings_for(fake, sentinel_rule_id="dcr-00"))
        assert fake.rows() == []


def test_the_settings_it_needs_are_named_before_any_request():
    problems = sink_problems(SinkSettings(uri="sentinel+https://dce.example.ingest.monitor.azure.com"), "ecs")
    assert problems == [
        "FORWARDER_SENTINEL_RULE_ID: required for a Microsoft Sentinel sink (the data collection rule's "
        "immutable id, dcr-...); FORWARDER_AZURE_TENANT_ID: required for a Microsoft Sentinel sink (the "
        "Entra tenant (directory) id); FORWARDER_AZURE_CLIENT_ID: required for a Microsoft Sentinel sink "
        "(the Entra app's client (application) id); FORWARDER_AZURE_CLIENT_SECRET: required for a "
        "Microsoft Sentinel sink (the Entra app's client secret)"
    ]


def env(**extra: str) -> dict:
    return {
        "FORWARDER_API_URL": "https://api.example.com",
        "FORWARDER_CLIENT_ID": "id",
        "FORWARDER_CLIENT_SECRET": "platform-secret",
        "FORWARDER_SINK": "sentinel+https://dce-1.eastus-1.ingest.monitor.azure.com",
        "FORWARDER_SENTINEL_RULE_ID": RULE_ID,
        "FORWARDER_AZURE_TENANT_ID": TENANT,
        "FORWARDER_AZURE_CLIENT_ID": CLIENT_ID,
        "FORWARDER_AZURE_CLIENT_SECRET": CLIENT_SECRET,
        **extra,
    }


def test_configuration_builds_the_sink_and_keeps_the_secret_out_of_reprs():
    settings = load_settings(env())
    assert settings.sink.options_of(SentinelOptions).stream == "Custom-EmailAuthAudit_CL"
    assert settings.sink.options_of(SentinelOptions).authority == "https://login.microsoftonline.com"
    assert CLIENT_SECRET in settings.secrets()
    sink = open_sink(settings.sink)
    assert sink.url == (
        "https://dce-1.eastus-1.ingest.monitor.azure.com/dataCollectionRules/"
        f"{RULE_ID}/streams/Custom-EmailAuthAudit_CL?api-version=2023-01-01"
    )
    for text in (repr(settings), repr(settings.sink), repr(sink)):
        assert CLIENT_SECRET not in text


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"FORWARDER_SINK": "sentinel+http://dce.example.com"}, "FORWARDER_SINK: must use https://"),
        ({"FORWARDER_AZURE_AUTHORITY": "http://login.example.com"}, "FORWARDER_AZURE_AUTHORITY: must use"),
        ({"FORWARDER_SENTINEL_STREAM": "EmailAuthAudit_CL"}, "FORWARDER_SENTINEL_STREAM: a custom table's"),
        ({"FORWARDER_FORMAT": "cef"}, "FORWARDER_FORMAT: the Microsoft Sentinel table EmailAuthAudit_CL"),
        ({"FORWARDER_SINK": "sentinel+https://dce.example.com?rule=x"}, "takes no query string"),
    ],
)
def test_configuration_refuses_what_cannot_work(extra, problem):
    with pytest.raises(ConfigError) as caught:
        load_settings(env(**extra))
    assert any(p.startswith(problem) or problem in p for p in caught.value.problems), caught.value.problems
    assert CLIENT_SECRET not in str(caught.value)


def test_a_body_gzip_would_make_larger_goes_as_it_is():
    """JSON text always compresses but for the shortest arrays: gzip's header and trailer alone are
    18 bytes. The wire is then never larger than the array, whose size the batching bounds."""
    with SentinelReceiver() as fake:
        probe_sink(settings_for(fake))
        sink_for(fake).send([event(1)])

        empty, one = [s for s in fake.seen() if s.path.startswith("/dataCollectionRules/")]
        assert (empty.wire_bytes, empty.headers.get("content-encoding")) == (2, None)
        assert one.headers["content-encoding"] == "gzip"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.sampled_from([0, 1_000, 40_000, 150_000, 400_000, 1_000_100]), min_size=1, max_size=24),
    limit=st.sampled_from([120_000, 500_000, MAX_REQUEST_BYTES]),  # a service stricter than its docs
    use_gzip=st.booleans(),
    faults=st.lists(st.sampled_from([429, 500, 503]), max_size=3),
    revoked=st.booleans(),
    batch_events=st.integers(1, 12),
)
def test_whatever_is_split_throttled_or_revoked_each_event_is_stored_once_or_rejected(
    waits, sizes, limit, use_gzip, faults, revoked, batch_events
):
    """413 splits (a service limit below the documented one), 429 and 5xx, a token revoked in between,
    rows too large for any request, any batch shape: every event is stored exactly once or rejected,
    only those whose row alone is over a limit are rejected, and no request passes the limit."""
    events = [
        event(n, random.Random(n).randbytes(size // 2 + 1).hex()[:size]) for n, size in enumerate(sizes)
    ]
    with SentinelReceiver(max_request_bytes=limit) as fake:
        sink = sink_for(fake, sleep=waits, gzip=use_gzip, batch_events=batch_events)
        sink.send([event(-1)])  # a token first: the faults below meet the uploads
        if revoked:
            fake.revoke_tokens()
        for status in faults:
            fake.fail_next(1, status=status, retry_after=1)
        result = sink.send(events)

        too_large = {e.id for e in events if len(row(e)) + 2 > limit}
        rejected = [r.event.id for r in result.rejected]
        assert sorted(rejected) == sorted(too_large)
        stored = [r["EventId"] for r in fake.rows()[1:]]
        assert sorted(stored) == sorted(e.id for e in events if e.id not in too_large), "lost or twice"
        assert result.delivered == len(events) - len(rejected)
        assert max(fake.uploads) <= limit and max(fake.wire_sizes) <= MAX_REQUEST_BYTES
