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

Floats are written as orjson (3.11.7 and later) writes them, since the event id is computed over
them: the shortest digits that read back to the same float, as Python's ``repr``, but ``1e-7``
where ``repr`` gives ``1e-07``, and ``0.00001`` for ``1e-05`` (``_float_text``). RFC 8785 (JCS)
spells numbers as ECMAScript does (``1`` for ``1.0``); following it would change every id orjson
computes today. An orjson that spells them otherwise (``1e16`` before 3.11.7) is not used.
A number too large for a float (``1e400``) is refused like NaN: orjson would write it as null.
"""

from __future__ import annotations

import json
import logging
import math
import re
from json.encoder import encode_basestring as _encode_basestring
from operator import itemgetter
from typing import Any, Callable, Iterable, List, Optional, Tuple

try:  # orjson is optional: Splunk's add-on packaging forbids compiled code.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by the pure-Python test run
    _orjson = None  # type: ignore[assignment]
if _orjson is not None and _orjson.dumps([1e16, 1e-7, 1e-5]) != b"[1e+16,1e-7,0.00001]":
    # An older orjson: its event ids would differ. Said once, as the pure-Python path is slower.
    logging.getLogger(__name__).warning(
        "orjson %s writes floats unlike 3.11.7 and later: JSON is read and written without it",
        getattr(_orjson, "__version__", "?"),
    )
    _orjson = None  # type: ignore[assignment]

HAVE_ORJSON = _orjson is not None
# orjson refuses to write a value nested deeper than this (its own recursion limit): what it writes
# needs no depth check of its own. Checked below, so another limit in another orjson only costs the
# check (``canonical_native`` then gives None).
NATIVE_DEPTH = 254


def _nest(levels: int) -> Any:
    value: Any = 0
    for n in range(levels):
        value = [value] if n % 2 else {"k": value}
    return value


def _writes_at_most(levels: int) -> bool:
    """Whether orjson writes values nested ``levels`` deep and refuses one level more."""
    try:
        _orjson.dumps(_nest(levels))
    except TypeError:
        return False
    try:
        _orjson.dumps(_nest(levels + 1))
    except TypeError:
        return True
    return False


_NATIVE_DEPTH_HOLDS = _orjson is not None and _writes_at_most(NATIVE_DEPTH)
# 19 digits or more may be over 64 bits (2**63 has 19): let the standard library read it exactly.
# Found by mapping every digit to "0" and anything else to " ", then one substring search: a few
# times cheaper than a regular expression, which restarts at every byte.
_LONG_RUN = b"0" * 19
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))


def loads(data: bytes | str) -> Any:
    """Parse JSON; ValueError names the cause when it cannot be parsed."""
    raw: Any = data
    if data.__class__ is not bytes and isinstance(data, str):  # a body is bytes: one check, no call
        raw = data.encode("utf-8", "surrogatepass")
    # partition, not find or "in", which cost more than the search itself: find parses its arguments
    # from a tuple, "in" first tries to read the needle as an integer. [1] is empty unless found.
    if _orjson is not None and not raw.translate(_DIGITS_AS_ZERO).partition(_LONG_RUN)[1]:
        try:
            return _orjson.loads(raw)
        except ValueError:
            pass  # not UTF-8, a lone surrogate, too deep: the standard library says which, or copes
    text = raw.decode("utf-8", "surrogateescape")
    try:
        return json.loads(text, parse_constant=_not_json, parse_float=_finite_float)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def _not_json(constant: str) -> Any:
    """The standard library reads NaN and Infinity, which JSON (and orjson) does not: a record
    holding one would be changed silently (written back as null), so it is refused like any other
    body that is not JSON."""
    raise ValueError(f"JSON holds {constant}, which is not a JSON value")


def _finite_float(text: str) -> float:
    """A number past the float range reads as infinity, which no JSON writer can give back."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"JSON holds the number {text[:40]}, too large for a float")
    return value


# _held(data): orjson's text in an object of its own size. orjson writes into a buffer of at least
# 1 KiB and shrinks it in place, so each text a pass holds (a record's canonical text, an event
# waiting for its batch) kept a fresh kilobyte or more of heap: a pass of 5,000 records held 20 MB
# more, and the first pass of a process faulted in two to three times the pages
# (``bench/held_pass.py``). orjson is asked for a newline after the text (_HELD, _HELD_SORTED): the
# copy is the text without it, one C call (a function joining the text to b"" cost 700 instructions
# more: its call and the join's tuple).
_held: Callable[[bytes], bytes] = itemgetter(slice(None, -1))
_HELD = _orjson.OPT_APPEND_NEWLINE if _orjson is not None else 0
_HELD_SORTED = _HELD | (_orjson.OPT_SORT_KEYS if _orjson is not None else 0)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, keys in insertion order."""
    if _orjson is not None:
        try:
            return _held(_orjson.dumps(value, option=_HELD))
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


def canonical_native(value: Any) -> Optional[bytes]:
    """``canonical(value)`` when orjson writes it, which proves that ``value`` nests at most
    ``NATIVE_DEPTH`` levels; None when it does not (no orjson, deeper, a long integer, a lone
    surrogate): ``canonical`` then writes it, or says why not."""
    if _orjson is not None and _NATIVE_DEPTH_HOLDS:
        try:
            return _held(_orjson.dumps(value, option=_HELD_SORTED))
        except TypeError:
            pass
    return None


def canonical(value: Any) -> bytes:
    """Sorted keys, compact, UTF-8: the form the event id is computed over."""
    if _orjson is not None:
        try:
            return _held(_orjson.dumps(value, option=_HELD_SORTED))
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
    else:
        if _respell(text):
            text = _dumps_loop(value, sort_keys)
    return text.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate


def ascii_text(value: Any) -> str:
    """Sorted, compact JSON escaped to ASCII: any value, lone surrogates and deep nesting included."""
    try:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), sort_keys=True)
    except RecursionError:
        # Floats as Python writes them, in every runtime: quarantine ids are computed over this text.
        return _dumps_loop(value, True, ascii=True, spell_float=float.__repr__)


# Python writes an exponent of one digit as two (1e-07); orjson as one (1e-7), and 1e-05 in full.
_SHORT_EXPONENT = re.compile(r"[0-9]e-0[0-9]")


def _respell(text: str) -> bool:
    """Whether the standard encoder's ``text`` may hold a float orjson spells otherwise: rare, so
    the document is then written again by the loop, float by float (a string may match too)."""
    return "e-0" in text and _SHORT_EXPONENT.search(text) is not None


def _float_text(value: float) -> str:
    """A finite float as orjson writes it: ``repr``'s digits, exponents from -9 to -6 in one digit,
    and an exponent of -5 written out in full."""
    text = float.__repr__(value)
    if "e-0" not in text:
        return text
    mantissa, exponent = text.split("e-0")
    if exponent != "5":
        return f"{mantissa}e-{exponent}"
    sign, digits = ("-", mantissa[1:]) if mantissa[0] == "-" else ("", mantissa)
    return f"{sign}0.0000{digits.replace('.', '')}"


class _Text(str):
    """Already-encoded JSON text on the loop's stack."""


def _dumps_loop(
    value: Any, sort_keys: bool, ascii: bool = False, spell_float: Callable[[float], str] = _float_text
) -> str:
    """The standard encoder's output without recursion (for values nested past its limit), each
    finite float written by ``spell_float``."""
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
        elif isinstance(item, float) and math.isfinite(item):
            out.append(spell_float(item))
        else:
            out.append(json.dumps(item, ensure_ascii=ascii, allow_nan=False))
    return "".join(out)
