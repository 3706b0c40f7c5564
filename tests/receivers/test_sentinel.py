"""The Sentinel fake is faithful: Microsoft's own clients (``azure-identity``'s ClientSecretCredential
through MSAL, and ``azure-monitor-ingestion``'s LogsIngestionClient) drive it over TLS as they drive
Entra ID and a data collection endpoint, and read its answers and its errors as the service's. What
the forwarder's sink sends is then held to the same requests, and each check the fake makes is shown
to refuse what it should."""

from __future__ import annotations

import gzip
import json
import logging

import pytest
import requests

pytest.importorskip("azure.monitor.ingestion")  # the test extra; not in the Python 3.9 pure pass

from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.identity import ClientSecretCredential
from azure.monitor.ingestion import LogsIngestionClient

from forwarder.sinks.sentinel import SentinelSink
from tests.receivers.sentinel import CLIENT_ID, CLIENT_SECRET, RULE_ID, STREAM, TENANT, SentinelReceiver
from tests.sinks.test_sentinel import event, settings_for

ROWS = [
    {
        "TimeGenerated": "2026-01-02T03:04:05.000000Z",
        "EventId": f"id-{n}",
        "Ecs": {"event": {"id": f"id-{n}"}},
    }
    for n in range(3)
]


@pytest.fixture(autouse=True)
def quiet_azure():
    logging.getLogger("azure").setLevel(logging.WARNING)


def client(fake: SentinelReceiver, secret: str = CLIENT_SECRET) -> LogsIngestionClient:
    credential = ClientSecretCredential(
        TENANT, CLIENT_ID, secret, authority=fake.base_url, disable_instance_discovery=True
    )
    return LogsIngestionClient(endpoint=fake.base_url, credential=credential, retry_total=0)


def test_microsofts_client_authenticates_and_uploads_to_the_fake(tls):
    with SentinelReceiver(tls=tls) as fake:
        client(fake).upload(rule_id=RULE_ID, stream_name=STREAM, logs=ROWS)

        assert fake.rows() == ROWS
        paths = [(s.path, s.status) for s in fake.seen()]
        assert paths == [
            (f"/{TENANT}/v2.0/.well-known/openid-configuration", 200),
            (f"/{TENANT}/oauth2/v2.0/token", 200),
            (f"/dataCollectionRules/{RULE_ID}/streams/{STREAM}", 204),
        ]
        upload = fake.seen()[-1].headers
        assert (upload["content-type"], upload["content-encoding"]) == ("application/json", "gzip")
        assert upload["authorization"].startswith("Bearer ") and upload["authorization"][7:] in fake.issued()


def test_our_sink_sends_what_microsofts_client_sends(tls):
    with SentinelReceiver(tls=tls) as fake:
        client(fake).upload(rule_id=RULE_ID, stream_name=STREAM, logs=ROWS[:1])
        SentinelSink(settings_for(fake)).send([event(1)])

        theirs, ours = [s for s in fake.seen() if s.path.startswith("/dataCollectionRules/")]
        assert ours.path == theirs.path
        for header in ("content-type", "content-encoding"):
            assert ours.headers[header] == theirs.headers[header]
        assert [s.status for s in (theirs, ours)] == [204, 204]
        assert len(fake.rows()) == 2


def test_microsofts_client_reads_the_fakes_refusal_of_a_wrong_secret_as_entras(tls):
    with SentinelReceiver(tls=tls) as fake:
        with pytest.raises(ClientAuthenticationError) as caught:
            client(fake, secret="not-the-secret").upload(rule_id=RULE_ID, stream_name=STREAM, logs=ROWS)
        assert "AADSTS7000215" in str(caught.value)
        assert fake.rows() == []


def test_microsofts_client_reads_the_fakes_ingestion_errors_as_azure_errors(tls):
    with SentinelReceiver(tls=tls) as fake:
        failures = []
        client(fake).upload(
            rule_id="dcr-ffffffffffffffffffffffffffffffff",
            stream_name=STREAM,
            logs=ROWS,
            on_error=failures.append,
        )
        (failure,) = failures
        assert isinstance(failure.error, HttpResponseError)
        assert failure.error.status_code == 404 and failure.error.error.code == "NotFound"
        assert failure.failed_logs == ROWS


def test_microsofts_client_can_send_an_array_over_the_limit_and_the_sink_cannot(tls):
    """The client sizes a chunk by its rows alone, without the array's brackets and separators: rows
    adding up to just under 1 MiB make a body over it, which the service refuses whichever way 1 MB is
    read. The sink counts the whole array."""
    row_text = "z" * 1000
    rows = [
        {"TimeGenerated": "2026-01-02T03:04:05.000000Z", "EventId": f"id-{n:04d}", "Ecs": row_text}
        for n in range(1030)
    ]
    size = len(json.dumps(rows[0]).encode())
    rows = rows[: (1024 * 1024) // size]
    with SentinelReceiver(tls=tls, max_request_bytes=1024 * 1024) as fake:
        failures = []
        client(fake).upload(rule_id=RULE_ID, stream_name=STREAM, logs=rows, on_error=failures.append)

        (failure,) = failures
        assert failure.error.status_code == 413
        assert fake.rows() == []

        events = [event(n, "z" * (size - 200)) for n in range(len(rows))]
        result = SentinelSink(settings_for(fake)).send(events)
        assert (result.delivered, result.rejected) == (len(events), [])
        assert max(fake.uploads) <= 1_000_000


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        ({"body": b'{"TimeGenerated": "2026-01-01T00:00:00Z"}'}, 400, "InvalidContent"),  # not an array
        ({"body": b'[{"EventId": "x"}]'}, 400, "InvalidContent"),
        ({"body": b"[" + b" " * 1_000_000 + b"]"}, 413, "ContentLengthLimitExceeded"),
        ({"body": gzip.compress(b"[" + b" " * 1_000_000 + b"]")}, 413, "ContentLengthLimitExceeded"),
        ({"body": b"\x1f\x8bnot gzip", "gzip": True}, 400, "InvalidContent"),
        ({"content_type": "application/x-ndjson"}, 415, "UnsupportedMediaType"),
        ({"query": "api-version=2021-11-01-preview"}, 400, "InvalidApiVersion"),
        ({"token": "eyJ0eXAiOiJKV1QifQ.forged.token"}, 401, "InvalidToken"),
    ],
)
def test_the_fake_refuses_what_the_service_refuses(change, status, code):
    """Each check of the fake, so that a sink sending any of these would fail here, not in Azure."""
    with SentinelReceiver() as fake:
        SentinelSink(settings_for(fake)).send([event(0)])  # a token the fake issued
        body = change.get("body", b'[{"TimeGenerated": "2026-01-01T00:00:00Z"}]')
        headers = {
            "Authorization": f"Bearer {change.get('token', fake.issued()[0])}",
            "Content-Type": change.get("content_type", "application/json"),
        }
        if change.get("gzip") or body[:2] == b"\x1f\x8b":
            headers["Content-Encoding"] = "gzip"
        query = change.get("query", "api-version=2023-01-01")
        answer = requests.post(
            f"{fake.base_url}/dataCollectionRules/{RULE_ID}/streams/{STREAM}?{query}",
            data=body,
            headers=headers,
            timeout=10,
        )
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code)
        assert len(fake.rows()) == 1
