"""Service-account auth (forwarder/sinks/google_auth.py) without a network: the key file's checks,
the signed assertion as Google verifies it, and the token cache's renewal, all over a recorded form
poster and a hand-driven clock."""

from __future__ import annotations

import base64
import json
from typing import List, Tuple
from urllib.parse import parse_qs

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from forwarder import logs
from forwarder.errors import SinkError
from forwarder.sinks.google_auth import (
    ASSERTION_SECONDS,
    EARLY_SECONDS,
    JWT_BEARER,
    SCOPE,
    AccessTokens,
    TokenReply,
    parse_key,
)

PRIVATE = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PEM = PRIVATE.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
).decode()
DOCUMENT = {
    "type": "service_account",
    "private_key_id": "0123abcd",
    "private_key": PEM,
    "client_email": "fwd@p.iam.gserviceaccount.com",
    "token_uri": "https://oauth2.googleapis.com/token",
}


def unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class Poster:
    """Answers each form with the next reply, recording (url, form fields)."""

    def __init__(self, *replies: TokenReply) -> None:
        self.replies = list(replies)
        self.forms: List[Tuple[str, dict]] = []

    def __call__(self, url: str, form: bytes) -> TokenReply:
        self.forms.append((url, {k: v[0] for k, v in parse_qs(form.decode()).items()}))
        return self.replies.pop(0)


def granted(token: str, seconds: int = 3600) -> TokenReply:
    return TokenReply(200, {"access_token": token, "expires_in": seconds}, "HTTP 200")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def tokens(poster: Poster, clock: Clock, remembered: List[str]) -> AccessTokens:
    key = parse_key(json.dumps(DOCUMENT), "/etc/key.json")
    return AccessTokens(key, poster, remembered.append, clock=clock, wall=lambda: 1_790_000_000.0)


def test_the_assertion_is_an_rs256_jwt_google_can_verify():
    poster = Poster(granted("ya29.first"))
    remembered: List[str] = []
    assert tokens(poster, Clock(), remembered).get() == "ya29.first"
    ((url, form),) = poster.forms
    assert url == DOCUMENT["token_uri"] and form["grant_type"] == JWT_BEARER
    head, body, signature = form["assertion"].split(".")
    PRIVATE.public_key().verify(
        unb64(signature), f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256()
    )
    assert json.loads(unb64(head)) == {"alg": "RS256", "typ": "JWT", "kid": "0123abcd"}
    assert json.loads(unb64(body)) == {
        "iss": DOCUMENT["client_email"],
        "scope": SCOPE,
        "aud": DOCUMENT["token_uri"],
        "iat": 1_790_000_000,
        "exp": 1_790_000_000 + ASSERTION_SECONDS,
    }
    assert remembered == [form["assertion"], "ya29.first"]  # both masked from then on
    assert logs.redact("token ya29.first") == f"token {logs.MASK}"


def test_a_token_is_kept_until_a_minute_before_it_expires_then_renewed():
    poster, clock = Poster(granted("ya29.one", 600), granted("ya29.two", 600)), Clock()
    cache = tokens(poster, clock, [])
    assert cache.get() == "ya29.one"
    clock.now += 600 - EARLY_SECONDS - 1
    assert cache.get() == "ya29.one" and len(poster.forms) == 1
    clock.now += 1
    assert cache.get() == "ya29.two" and len(poster.forms) == 2


def test_a_forgotten_token_is_asked_again_but_a_newer_one_is_kept():
    poster = Poster(granted("ya29.one"), granted("ya29.two"))
    cache = tokens(poster, Clock(), [])
    cache.get()
    cache.forget("ya29.stale")  # refused by a request that raced a renewal: the current one stays
    assert cache.get() == "ya29.one"
    cache.forget("ya29.one")
    assert cache.get() == "ya29.two"


def test_a_refused_token_request_names_the_variable():
    refused = TokenReply(400, {"error": "invalid_grant"}, "HTTP 400 invalid_grant: Invalid JWT Signature.")
    with pytest.raises(SinkError) as caught:
        tokens(Poster(refused), Clock(), []).get()
    assert str(caught.value) == (
        "Google refused the service account's token request: HTTP 400 invalid_grant: Invalid JWT Signature.; "
        "check the key in FORWARDER_SECOPS_CREDENTIALS (disabled, deleted or of another account?)"
    )


def test_a_reply_without_a_token_proves_nothing():
    with pytest.raises(SinkError, match="without an access token"):
        tokens(Poster(TokenReply(200, {"token_type": "Bearer"}, "HTTP 200")), Clock(), []).get()


def test_the_key_and_its_private_key_are_masked_once_read():
    text = json.dumps(DOCUMENT)
    parse_key(text, "/etc/key.json")
    line = next(line for line in PEM.splitlines() if "-----" not in line)
    assert logs.redact(f"a {text} b {line} c") == f"a {logs.MASK} b {logs.MASK} c"
    assert PEM not in repr(parse_key(text, "/etc/key.json"))


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("not json", "does not hold a JSON service-account key"),
        (json.dumps({"type": "authorized_user"}), "is not a service-account key"),
        (
            json.dumps({"type": "service_account", "client_email": "a@b"}),
            "has no private_key, private_key_id",
        ),
        (
            json.dumps({**DOCUMENT, "token_uri": "http://oauth.example.com/token"}),
            "plain http is allowed for loopback hosts only",
        ),
    ],
)
def test_a_bad_key_file_is_named_without_quoting_it(document, problem):
    with pytest.raises(ValueError) as caught:
        parse_key(document, "/etc/key.json")
    assert problem in str(caught.value) and "FORWARDER_SECOPS_CREDENTIALS" in str(caught.value)
    assert "/etc/key.json" in str(caught.value) and "PRIVATE KEY" not in str(caught.value)
