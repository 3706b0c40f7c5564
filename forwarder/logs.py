"""JSON logs (python-json-logger) with every known secret masked in the final output."""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Dict, Iterable, List, Optional, TextIO

try:  # python-json-logger 3.x and 4.x
    from pythonjsonlogger.json import JsonFormatter
except ImportError:  # pragma: no cover - 2.x, as some Splunk environments still vendor it
    from pythonjsonlogger.jsonlogger import JsonFormatter

MASK = "***"
_secrets: List[str] = []
_lock = threading.Lock()


def register_secrets(values: Iterable[Optional[str]]) -> None:
    """Add values to mask in every log line from now on (short values are ignored: too common)."""
    with _lock:
        for value in values:
            if value and len(value) >= 4 and value not in _secrets:
                _secrets.append(value)


def redact(text: str) -> str:
    with _lock:
        secrets = list(_secrets)
    for secret in secrets:
        for form in (secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
            text = text.replace(form, MASK)
    return text


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
