"""Secrets from AWS: ``secretsmanager:<id>`` or ``ssm:<name>`` (a SecureString is decrypted).

A warm Lambda reuses what it fetched for ``CACHE_SECONDS``, so a rotated secret is picked up within
that time without one Secrets Manager call per run; ``forget()`` drops the cache at once (the
handler calls it after a failed run, in case the failure was a rotated secret). Every fetch goes
through ``aws.call``: ``FORWARDER_HTTP_TIMEOUT`` bounds it whole and a stop request ends it. Secret
values never appear in errors or reprs: messages name the reference and what went wrong only.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Dict, Tuple

from .api.client import Credentials
from .errors import ConfigError
from .jsonutil import loads
from .logs import clip
from .plugins import Registry

CACHE_SECONDS = 300.0
# reference kind -> the module whose ``fetch(name, timeout_seconds)`` reads it
SOURCES = Registry(
    "FORWARDER_CREDENTIALS",
    "secret source",
    {"secretsmanager": "forwarder.secret_sources.secretsmanager", "ssm": "forwarder.secret_sources.ssm"},
)

_cache: Dict[str, Tuple[float, str]] = {}  # reference -> (fetched at, monotonic seconds; value)
_lock = threading.Lock()  # _cache, read by concurrent tenant runs; never held across a fetch


def _fetch(kind: str, name: str, timeout_seconds: float) -> str:
    fetch: Callable[[str, float], str] = SOURCES.load(kind).fetch
    return fetch(name, timeout_seconds)


def load_secret(
    ref: str, variable: str, clock: Callable[[], float] = time.monotonic, timeout_seconds: float = 60.0
) -> str:
    """The text stored at ``ref``; ConfigError naming ``variable`` and ``ref`` when unusable.
    ``timeout_seconds`` (FORWARDER_HTTP_TIMEOUT) bounds the fetch whole, botocore's retries included."""
    kind, _, name = ref.partition(":")
    if kind not in SOURCES or not name:
        raise ConfigError([f"{variable}: expected secretsmanager:<secret id> or ssm:<parameter name>"])
    now = clock()
    with _lock:
        hit = _cache.get(ref)
    if hit is not None and now - hit[0] < CACHE_SECONDS:
        return hit[1]
    try:
        value = _fetch(kind, name, timeout_seconds)
    except ValueError as exc:
        raise ConfigError([f"{variable}: cannot read {clip(ref)}: {clip(str(exc))}"]) from None
    with _lock:
        _cache[ref] = (now, value)
    return value


def load_credentials(
    ref: str, clock: Callable[[], float] = time.monotonic, timeout_seconds: float = 60.0
) -> Credentials:
    """API credentials from a JSON secret ``{"client_id": ..., "client_secret": ...}``."""
    text = load_secret(ref, "FORWARDER_CREDENTIALS", clock, timeout_seconds)
    try:
        doc = loads(text)
    except ValueError:
        doc = None  # the parser's message may quote the secret
    values = [doc.get(k) if isinstance(doc, dict) else None for k in ("client_id", "client_secret")]
    if not all(isinstance(v, str) and v for v in values):
        shape = '{"client_id": "...", "client_secret": "..."}'
        raise ConfigError([f"FORWARDER_CREDENTIALS: {clip(ref)} must hold JSON {shape}"])
    return Credentials(str(values[0]), str(values[1]))


def load_token(
    ref: str,
    clock: Callable[[], float] = time.monotonic,
    timeout_seconds: float = 60.0,
    variable: str = "FORWARDER_SINK_TOKEN_SECRET",
    key: str = "token",
) -> str:
    """A sink's secret named by ``variable``: the secret's text, or its ``key`` field when it holds a
    JSON object (a sink token, an Entra app's client secret)."""
    text = load_secret(ref, variable, clock, timeout_seconds).strip()
    if text.startswith("{"):
        try:
            doc = loads(text)
        except ValueError:
            doc = None
        token = doc.get(key) if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token:
            raise ConfigError([f"{variable}: {clip(ref)} holds JSON without a {key} field"])
        return token
    if not text:
        raise ConfigError([f"{variable}: {clip(ref)} is empty"])
    return text


def forget() -> None:
    """Drop every cached secret: the next load fetches again."""
    with _lock:
        _cache.clear()
