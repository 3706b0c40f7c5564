"""JSON encoding with orjson when installed and the standard library otherwise.

The Splunk add-on ships pure Python only, so every caller goes through these helpers and both
paths must give the same bytes for the same value (tests compare them).

Numbers round-trip exactly: orjson reads an integer over 64 bits as a float and refuses to write
one, so a document holding a long run of digits is read, and such a value written, by the standard
library instead (per document: the rest keep orjson's speed). A body that is not UTF-8, or holds a
lone surrogate escape, is still read: bad bytes become lone surrogates (``surrogateescape``), which
no encoder writes back as UTF-8, so the record holding them is refused (and quarantined) rather
than silently changed. A value nested too deeply for the recursive encoders is written by a
loop.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring as _encode_basestring
from typing import Any, Iterable, List, Tuple

try:  # orjson is optional: Splunk's add-on packaging forbids compiled code.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by the pure-Python test run
    _orjson = None  # type: ignore[assignment]

HAVE_ORJSON = _orjson is not None
# 19 digits or more may be over 64 bits (2**63 has 19): let the standard library read it exactly.
# Found by mapping every digit to "0" and anything else to " ", then one substring search: a few
# times cheaper than a regular expression, which restarts at every byte.
_LONG_RUN = b"0" * 19
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))


def loads(data: bytes | str) -> Any:
    """Parse JSON; ValueError names the cause when it cannot be parsed."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    # find, not "in": the operator goes through the buffer protocol and costs twice as much here
    if _orjson is not None and raw.translate(_DIGITS_AS_ZERO).find(_LONG_RUN) < 0:
        try:
            return _orjson.loads(raw)
        except ValueError:
            pass  # not UTF-8, a lone surrogate, too deep: the standard library says which, or copes
    text = raw.decode("utf-8", "surrogateescape")
    try:
        return json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def _not_json(constant: str) -> Any:
    """The standard library reads NaN and Infinity, which JSON (and orjson) does not: a record
    holding one would be changed silently (written back as null), so it is refused like any other
    body that is not JSON."""
    raise ValueError(f"JSON holds {constant}, which is not a JSON value")


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, keys in insertion order."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value)
        except TypeError:  # integers over 64 bits, lone surrogates, deep nesting: see _encode
            pass
    return _encode(value, sort_keys=False)


def dumps_each(values: Iterable[Any]) -> Tuple[bytes, ...]:
    """``dumps`` of each value: one C loop when orjson writes them all."""
    if _orjson is not None:
        try:
            return tuple(map(_orjson.dumps, values))
        except TypeError:
            pass
    # A string is most values: the standard encoder's own function for it skips json.dumps's set-up.
    return tuple([_encode_string(value) if value.__class__ is str else dumps(value) for value in values])


def _encode_string(text: str) -> bytes:
    """``_encode`` of a string."""
    return _encode_basestring(text).encode("utf-8")


def string_content(text: str) -> bytes:
    """``dumps(text)`` without its quotes: ``text`` as it goes between them, escaped."""
    return dumps(text)[1:-1]


def json_in_string(data: bytes) -> bytes:
    """``string_content`` of JSON text ``data`` (as ``dumps`` and ``canonical`` write it), without
    decoding it: such text holds no control character (JSON escapes them), so only its backslashes
    and quotes need escaping. One C pass each, where decoding and encoding again costs three."""
    return data.replace(b"\\", b"\\\\").replace(b'"', b'\\"')


def canonical(value: Any) -> bytes:
    """Sorted keys, compact, UTF-8: the form the event id is computed over."""
    if _orjson is not None:
        try:
            return _orjson.dumps(value, option=_orjson.OPT_SORT_KEYS)
        except TypeError:
            pass
    return _encode(value, sort_keys=True)


def _encode(value: Any, sort_keys: bool) -> bytes:
    """The standard library's encoder: without orjson, or for what orjson refuses."""
    try:
        text = json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, allow_nan=False
        )
    except RecursionError:
        text = _dumps_loop(value, sort_keys)
    return text.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate


def ascii_text(value: Any) -> str:
    """Sorted, compact JSON escaped to ASCII: any value, lone surrogates and deep nesting included."""
    try:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), sort_keys=True)
    except RecursionError:
        return _dumps_loop(value, True, ascii=True)


class _Text(str):
    """Already-encoded JSON text on the loop's stack."""


def _dumps_loop(value: Any, sort_keys: bool, ascii: bool = False) -> str:
    """The standard encoder's output without recursion, for values nested past its limit."""
    out: List[str] = []
    stack: List[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Text):
            out.append(item)
        elif isinstance(item, dict):
            pairs = sorted(item.items()) if sort_keys else list(item.items())
            stack.append(_Text("}"))
            for n in range(len(pairs) - 1, -1, -1):
                key, child = pairs[n]
                stack.append(child)
                stack.append(_Text(("," if n else "") + json.dumps(str(key), ensure_ascii=ascii) + ":"))
            out.append("{")
        elif isinstance(item, (list, tuple)):
            stack.append(_Text("]"))
            for n in range(len(item) - 1, -1, -1):
                stack.append(item[n])
                if n:
                    stack.append(_Text(","))
            out.append("[")
        else:
            out.append(json.dumps(item, ensure_ascii=ascii, allow_nan=False))
    return "".join(out)
