"""JSON encoding with orjson when installed and the standard library otherwise.

The Splunk add-on ships pure Python only, so every caller goes through these helpers and both
paths must give the same bytes for the same value (tests compare them).
"""

from __future__ import annotations

import json
from typing import Any

try:  # orjson is optional: Splunk's add-on packaging forbids compiled code.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by the pure-Python test run
    _orjson = None  # type: ignore[assignment]

HAVE_ORJSON = _orjson is not None


def loads(data: bytes | str) -> Any:
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, keys in insertion order."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value)
        except TypeError:  # integers over 64 bits; the standard library handles them
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def canonical(value: Any) -> bytes:
    """Sorted keys, compact, UTF-8: the form the event id is computed over."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, option=_orjson.OPT_SORT_KEYS)
        except TypeError:
            pass
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
    ).encode("utf-8")
