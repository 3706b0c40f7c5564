"""Google service-account auth for the Google SecOps sink: the JSON key, and access tokens for it.

The OAuth 2.0 flow for service accounts: a JWT (header ``RS256`` with the key's id; claims ``iss``
the account's email, ``scope``, ``aud`` the key's ``token_uri``, ``iat``, ``exp`` an hour later)
signed with the key's private key, exchanged at ``token_uri`` (``grant_type`` jwt-bearer) for an
access token, which is kept until a minute before it expires. Signing uses ``cryptography`` (the
``google`` extra), imported only when the sink opens.

Secrets: the key file's text and its private key (whole, without line breaks, and line by line) are
registered with ``logs.register_secrets``, the signed assertion and every access token (new every
hour) with ``logs.register_tokens`` (a token again whenever it is handed out), as soon as they are
known, and handed to the sink's poster, which masks them in every error it builds. An
error about the key names the variable and the path or reference, never anything the key holds.
"""

from __future__ import annotations

import base64
import threading
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple
from urllib.parse import urlencode

from .. import jsonutil
from ..errors import SinkError
from ..logs import register_secrets, register_tokens
from ..urls import check_url

VARIABLE = "FORWARDER_SECOPS_CREDENTIALS"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FORM = "application/x-www-form-urlencoded"
ASSERTION_SECONDS = 3600  # the longest Google accepts
EARLY_SECONDS = 60.0  # a token is renewed this long before it expires


class ServiceAccountKey(NamedTuple):
    client_email: str
    private_key: str  # PEM
    private_key_id: str
    token_uri: str

    def __repr__(self) -> str:  # the private key never reaches a repr
        return f"ServiceAccountKey(client_email={self.client_email!r}, token_uri={self.token_uri!r})"


def key_secrets(text: str, private_key: str) -> List[str]:
    """Every form of the key's secret parts a message could show."""
    body = [line.strip() for line in private_key.splitlines() if line.strip() and "-----" not in line]
    return [text, private_key, private_key.replace("\n", "\\n"), "".join(body), *body]


def parse_key(text: str, where: str) -> ServiceAccountKey:
    """The key in ``text`` (a service-account JSON key file's content); ValueError naming
    FORWARDER_SECOPS_CREDENTIALS and ``where`` (its path or reference), quoting nothing of the key."""
    try:
        doc = jsonutil.loads(text)
    except ValueError:
        doc = None  # the parser's message may quote the key
    if not isinstance(doc, dict):
        raise ValueError(f"{VARIABLE}: {where} does not hold a JSON service-account key")
    kind = doc.get("type")
    if kind != "service_account":
        raise ValueError(
            f"{VARIABLE}: {where} is not a service-account key (its type is {kind!r}, not "
            "'service_account'); create a JSON key for the service account in IAM & Admin"
        )
    values = {name: doc.get(name) for name in ("client_email", "private_key", "private_key_id")}
    missing = [name for name, value in values.items() if not isinstance(value, str) or not value]
    if missing:
        raise ValueError(f"{VARIABLE}: the key in {where} has no {', '.join(missing)}")
    token_uri = doc.get("token_uri") or DEFAULT_TOKEN_URI
    problem = check_url(str(token_uri), f"the key's token_uri ({where})")
    if problem:
        raise ValueError(f"{VARIABLE}: {problem}")
    register_secrets(key_secrets(text, str(values["private_key"])))
    return ServiceAccountKey(
        str(values["client_email"]), str(values["private_key"]), str(values["private_key_id"]), str(token_uri)
    )


def load_key(reference: Optional[str], timeout_seconds: float) -> ServiceAccountKey:
    """The key at ``reference``: a file path, or ``secretsmanager:<id>`` / ``ssm:<name>`` holding the
    key's JSON (read through ``credentials.load_secret``); ValueError naming the variable."""
    reference = (reference or "").strip()
    if not reference:
        raise ValueError(
            f"{VARIABLE} is required for a Google SecOps sink: the path of the service account's JSON key "
            "(or secretsmanager:<id> / ssm:<name> holding it)"
        )
    if reference.partition(":")[0] in ("secretsmanager", "ssm"):
        from ..credentials import load_secret
        from ..errors import ConfigError

        try:
            text = load_secret(reference, VARIABLE, timeout_seconds=timeout_seconds)
        except ConfigError as exc:
            raise ValueError(exc.problems[0]) from None
    else:
        try:
            with open(reference, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise ValueError(f"{VARIABLE}: cannot read {reference}: {exc.strerror or exc}") from None
    return parse_key(text, reference)


def signing_problem() -> Optional[str]:
    """What keeps this process from signing a JWT (``cryptography`` missing), or None."""
    try:
        import cryptography.hazmat.primitives.asymmetric.rsa  # noqa: F401
    except ImportError:
        return (
            "the Google SecOps sink needs the cryptography package to sign its token requests: "
            "pip install 'emailauth-audit-forwarder[google]'"
        )
    return None


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def assertion(key: ServiceAccountKey, now: float) -> str:
    """The signed JWT asking ``key.token_uri`` for a token of ``SCOPE``."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    try:
        private = serialization.load_pem_private_key(key.private_key.encode("utf-8"), password=None)
    except (ValueError, TypeError):
        raise ValueError(f"{VARIABLE}: the key's private_key is not a PEM RSA private key") from None
    if not isinstance(private, rsa.RSAPrivateKey):
        raise ValueError(f"{VARIABLE}: the key's private_key is not an RSA key")
    header = {"alg": "RS256", "typ": "JWT", "kid": key.private_key_id}
    issued = int(now)
    claims = {
        "iss": key.client_email,
        "scope": SCOPE,
        "aud": key.token_uri,
        "iat": issued,
        "exp": issued + ASSERTION_SECONDS,
    }
    signing_input = _b64(jsonutil.dumps(header)) + b"." + _b64(jsonutil.dumps(claims))
    signature = private.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return (signing_input + b"." + _b64(signature)).decode("ascii")


# Posts a form to a URL and returns (status, reply object or None): the sink's HTTP path.
PostForm = Callable[[str, bytes], "TokenReply"]


class TokenReply(NamedTuple):
    status: int
    body: Optional[Dict[str, Any]]
    described: str  # the reply as an error quotes it


class AccessTokens:
    """Access tokens for one key, kept until shortly before they expire; safe across threads (the
    sink's requests in flight share one token, and the first to find it stale renews it)."""

    def __init__(
        self,
        key: ServiceAccountKey,
        post_form: PostForm,
        remember: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.key = key
        self._post_form = post_form
        self._remember_secret = remember  # the sink's poster masks it in its errors from then on
        self._clock, self._wall = clock, wall
        self._lock = threading.Lock()
        self._token: Optional[str] = None
        self._expires = 0.0
        self.exchanges = 0

    def __repr__(self) -> str:
        return f"AccessTokens(client_email={self.key.client_email!r})"

    def get(self) -> str:
        with self._lock:
            if self._token is None or self._clock() >= self._expires:
                self._token, self._expires = self._exchange()
            register_tokens([self._token])  # masked while in use: the registry keeps those last used
            return self._token

    def forget(self, token: str) -> None:
        """Drop ``token`` (refused by the service: revoked, or expired early)."""
        with self._lock:
            if self._token == token:
                self._token = None

    def _exchange(self) -> Tuple[str, float]:
        started = self._clock()
        signed = assertion(self.key, self._wall())
        self._remember(signed)
        form = urlencode({"grant_type": JWT_BEARER, "assertion": signed}).encode("ascii")
        reply = self._post_form(self.key.token_uri, form)
        self.exchanges += 1
        if reply.status != 200:
            hint = (
                "check the key in FORWARDER_SECOPS_CREDENTIALS (disabled, deleted or of another account?)"
                if reply.status in (400, 401, 403)
                else "check the key's token_uri"
            )
            raise SinkError(f"Google refused the service account's token request: {reply.described}; {hint}")
        body = reply.body or {}
        token, lifetime = body.get("access_token"), body.get("expires_in", ASSERTION_SECONDS)
        if not isinstance(token, str) or not token or isinstance(lifetime, bool):
            raise SinkError(f"Google answered the token request without an access token ({reply.described})")
        self._remember(token)
        try:
            seconds = float(lifetime)
        except (TypeError, ValueError):
            seconds = ASSERTION_SECONDS
        return token, started + max(0.0, seconds - EARLY_SECONDS)

    def _remember(self, secret: str) -> None:
        register_tokens([secret])
        self._remember_secret(secret)
