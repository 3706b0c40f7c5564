"""Tokens: expiry from the answer, the cache and the one refresh."""

from __future__ import annotations

import threading

import pytest

from forwarder import logs
from forwarder.api.token import TokenProvider, parse_token
from forwarder.errors import ApiError, MalformedResponse

NOW = 1_800_000_000.0


@pytest.mark.parametrize("created", [NOW, NOW * 1000, int(NOW)])
def test_token_expiry_from_seconds_or_milliseconds(created):
    token = parse_token({"access_token": "t", "expires_in": 14400, "created_at": created}, received_at=NOW)
    assert token.expires_at == pytest.approx(NOW + 14400 - 300)


def test_token_server_clock_only_shortens_the_lifetime():
    ahead = parse_token({"access_token": "t", "expires_in": 14400, "created_at": NOW + 3600}, NOW)
    behind = parse_token({"access_token": "t", "expires_in": 14400, "created_at": NOW - 3600}, NOW)
    far_behind = parse_token({"access_token": "t", "expires_in": 14400, "created_at": NOW - 86400}, NOW)
    assert ahead.expires_at == pytest.approx(NOW + 14400 - 300)
    assert behind.expires_at == pytest.approx(NOW + 10800 - 300)
    assert far_behind.expires_at == pytest.approx(NOW + 14400 - 300)  # nonsense clock: distrusted
    assert "t" not in repr(ahead).replace("Token", "").replace("expires_at", "")


@pytest.mark.parametrize("body", [None, [], {"token": "x"}, {"access_token": ""}, {"access_token": 5}])
def test_token_response_without_a_token_is_malformed(body):
    with pytest.raises(MalformedResponse):
        parse_token(body, NOW)


@pytest.mark.parametrize(
    "value",
    ["abc\r\nX-Injected: 1", "tök€n-not-latin-1", "two words", 'a"quote', "a,b", "xq=zz=w", "\x00nul"],
)
def test_a_token_a_bearer_header_cannot_carry_is_refused_without_quoting_it(value):
    with pytest.raises(MalformedResponse) as info:
        parse_token({"access_token": value}, NOW, endpoint="POST /v1/ep/token")
    message = str(info.value)
    assert "POST /v1/ep/token" in message and "RFC 6750" in message
    assert not [piece for piece in (value, repr(value)[1:-1], value[:3]) if piece in message]


@pytest.mark.parametrize(
    "value",
    ["eyJhbGciOi.eyJzdWIi.SflKxwRJ-_", "mF_9.B5f-4.1JqM", "a+b/c~d==", "x", "AAAA="],
)
def test_every_rfc6750_token_is_accepted(value):
    assert parse_token({"access_token": value}, NOW).value == value


def test_provider_caches_and_refreshes_only_the_rejected_token():
    clock = [NOW]
    issued = []

    def fetch():
        issued.append(f"tok{len(issued)}")
        return {"access_token": issued[-1], "expires_in": 600, "created_at": clock[0]}

    tokens = TokenProvider(fetch, clock=lambda: clock[0])
    assert tokens.get() == tokens.get() == "tok0"
    assert tokens.refresh("stale-from-another-thread") == "tok0"
    assert tokens.refresh("tok0") == "tok1"
    clock[0] += 600  # past expiry minus the margin
    assert tokens.get() == "tok2"


def test_a_failed_token_request_is_made_once_and_its_error_given_to_every_caller():
    """Stream threads that all need a token while the endpoint fails: one request in flight, and
    once it failed nobody asks again this run (the same error, at once)."""
    calls = []
    started = threading.Event()
    release = threading.Event()

    def fetch():
        calls.append(1)
        started.set()
        release.wait(5)
        raise ApiError("POST /v1/ep/token: ReadTimeout (after 2 attempts)")

    tokens = TokenProvider(fetch)
    errors = []

    def stream():
        try:
            tokens.get()
        except ApiError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=stream) for _ in range(20)]
    for thread in threads:
        thread.start()
    started.wait(5)
    release.set()
    for thread in threads:
        thread.join(5)
    with pytest.raises(ApiError):
        tokens.refresh("any")
    assert len(calls) == 1
    assert len(errors) == 20 and len(set(errors)) == 1 and "POST /v1/ep/token" in errors[0]


def test_a_token_handed_out_is_masked_however_many_tokens_came_since_it_was_fetched():
    provider = TokenProvider(
        lambda: {"access_token": "the-run-s-own-token", "expires_in": 14400}, lambda: NOW
    )
    assert provider.get() == "the-run-s-own-token"
    logs.register_tokens([f"other-tenant-token-{n}" for n in range(logs.MAX_TOKENS)])  # pushes it out
    assert logs.redact("the-run-s-own-token") == "the-run-s-own-token"  # dropped: least recently used
    assert provider.get() == "the-run-s-own-token"  # in use again ...
    assert logs.redact("Bearer the-run-s-own-token") == "Bearer ***"  # ... so masked again
