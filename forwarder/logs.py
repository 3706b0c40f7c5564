"""JSON logs (python-json-logger) with every known secret masked in the final output."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
from collections import OrderedDict
from contextvars import ContextVar
from typing import Dict, Iterable, Iterator, List, Optional, TextIO
from urllib.parse import quote, quote_plus

try:  # python-json-logger 3.x and 4.x
    from pythonjsonlogger.json import JsonFormatter
except ImportError:  # pragma: no cover - 2.x, as some Splunk environments still vendor it
    from pythonjsonlogger.jsonlogger import JsonFormatter

MASK = "***"
MAX_TOKENS = 256  # access and session tokens masked at once: the most recently used are kept


class Secrets:
    """The values masked in every output, in every form text may carry them (``secret_forms``).

    Configuration secrets (client secrets, sink tokens, passwords) are kept for the life of the
    process: there are as many as the settings name. Tokens (access tokens, session keys) come anew
    every few hours for as long as the process runs: the ``max_tokens`` most recently registered or
    used are kept, and the least recently used is dropped past that, so the list every log line is
    scanned against stays bounded. A token in use is registered again each time it is handed out."""

    def __init__(self, max_tokens: int = MAX_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._lock = threading.Lock()  # a token is registered while other threads redact
        self._static: Dict[str, None] = {}  # forms of configuration secrets, in order
        self._tokens: OrderedDict[str, List[str]] = OrderedDict()  # token -> its forms, oldest first
        self._forms: List[str] = []  # every form, longest first: what ``redact`` scans

    def register(self, values: Iterable[Optional[str]]) -> None:
        """Configuration secrets, masked from now on (short values are ignored: too common)."""
        with self._lock:
            for value in _maskable(values):
                self._static.update(dict.fromkeys(secret_forms(value)))
            self._rebuild()

    def register_tokens(self, values: Iterable[Optional[str]]) -> None:
        """Tokens, masked from now on; one registered already becomes the most recently used."""
        with self._lock:
            added = False
            for value in _maskable(values):
                if value in self._tokens:
                    self._tokens.move_to_end(value)
                    continue
                self._tokens[value] = secret_forms(value)
                added = True
                while len(self._tokens) > self.max_tokens:
                    self._tokens.popitem(last=False)
            if added:
                self._rebuild()

    def _rebuild(self) -> None:
        forms = dict(self._static)
        for token_forms in self._tokens.values():
            forms.update(dict.fromkeys(token_forms))
        # a longer form first, so no part of it is left over
        self._forms = sorted(forms, key=len, reverse=True)

    def forms(self) -> List[str]:
        """Every form, longest first: a list replaced whole, never changed, so read without the lock."""
        return self._forms

    def redact(self, text: str) -> str:
        for secret in self.forms():
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def longest(self) -> int:
        forms = self.forms()
        return len(forms[0]) if forms else 0


def _maskable(values: Iterable[Optional[str]]) -> Iterator[str]:
    return (value for value in values if value and len(value) >= 4)


def _escaped(text: str) -> List[str]:
    """``text`` as a Python quote (``repr``, ``ascii``) or a JSON string (both ways) writes it."""
    return [
        repr(text)[1:-1],
        ascii(text)[1:-1],
        json.dumps(text)[1:-1],
        json.dumps(text, ensure_ascii=False)[1:-1],
    ]


def secret_forms(secret: str) -> List[str]:
    """Every way a secret shows up in text: as it is, URL-encoded as a form field or a query
    (quote_plus) or a path (quote) encodes it, and any of those escaped up to three times over (an
    exception quoting a header value, a message quoting that exception's args, a log line's JSON)."""
    forms = dict.fromkeys([secret, quote_plus(secret), quote(secret, safe=""), quote(secret)])
    latest = list(forms)
    for _ in range(3):
        latest = [e for form in latest for e in _escaped(form) if e not in forms]  # only what is new
        forms.update(dict.fromkeys(latest))
    return list(forms)


SECRETS = Secrets()  # the process's: every log line, report and message is masked against it


def register_secrets(values: Iterable[Optional[str]]) -> None:
    """Configuration secrets to mask in every output from now on: the client secret, sink tokens,
    passwords. Tokens that are renewed while the process runs go to ``register_tokens``."""
    SECRETS.register(values)


def register_tokens(values: Iterable[Optional[str]]) -> None:
    """Access tokens and session keys to mask in every output from now on (the most recently used
    ``MAX_TOKENS`` of them: register a token again whenever it is handed out)."""
    SECRETS.register_tokens(values)


def redact(text: str) -> str:
    """``text`` with every registered secret, in every form, replaced by ***: for log lines,
    reports, check output and error messages alike."""
    return SECRETS.redact(text)


QUOTE_LIMIT = 200  # characters a message shows of one value a user or a peer gave


def _masked_start(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text`` with every secret masked, masked before the cut
    (over ``limit`` plus the longest secret), so no part of a secret is left where the cut falls."""
    return redact(text[: limit + SECRETS.longest()])[:limit]


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` masked and cut to ``limit`` characters, saying how long it was: what a message or a
    log line shows of a value of any size (a 50 MB name costs it a few hundred characters)."""
    if len(text) <= limit:
        return redact(text)
    return f"{_masked_start(text, limit)}... ({len(text)} characters)"


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``value`` as ``{value!r}`` quotes it, through ``clip``: every message quoting a value that a
    user or a peer gave quotes it this way."""
    if not isinstance(value, str):
        return clip(repr(value), limit)
    if len(value) <= limit:
        return repr(redact(value))
    return f"{_masked_start(value, limit)!r}... ({len(value)} characters)"


_tenant: ContextVar[str] = ContextVar("tenant", default="")


@contextlib.contextmanager
def tenant_logs(name: str) -> Iterator[None]:
    """Every line logged in this thread meanwhile names tenant ``name`` (field ``tenant``), so the
    runs of tenants side by side can be told apart. Threads started inside do not inherit it."""
    token = _tenant.set(name)
    try:
        yield
    finally:
        _tenant.reset(token)


class _TenantField(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        name = _tenant.get()
        if name and not hasattr(record, "tenant"):
            record.tenant = name
        return True


class RedactingJsonFormatter(JsonFormatter):
    """Masks secrets after formatting, so messages, extra fields and tracebacks are all covered."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(str(super().format(record)))


def configure(
    level: str = "INFO",
    stream: Optional[TextIO] = None,
    handler: Optional[logging.Handler] = None,
    static_fields: Optional[Dict[str, str]] = None,
) -> None:
    """JSON lines on ``handler`` (default: a stream handler on ``stream`` or stderr) for the root logger."""
    handler = handler or logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(_TenantField())
    handler.setFormatter(
        RedactingJsonFormatter(
            "%(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",  # ISO 8601 in UTC, what SIEMs parse without a props.conf
            static_fields=static_fields or {},
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # urllib3 logs full URLs at DEBUG; the query holds no secret, but keep the noise down.
    logging.getLogger("urllib3").setLevel(max(logging.WARNING, root.level))
