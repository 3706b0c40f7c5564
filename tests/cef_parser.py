"""A strict CEF parser for the tests, written from ArcSight's CEF standard (v25), not from our formatter.

Strict means it refuses what a lenient SIEM parser would guess at: a raw CR or LF anywhere, a
backslash sequence the standard does not define, a header with the wrong number of fields, an
extension key that is not alphanumeric or appears twice, and a value holding an unescaped ``=``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Tuple

HEADER_FIELDS = 7  # version, vendor, product, version, signature id, name, severity
_KEY = re.compile(r"[A-Za-z0-9_]+")
_SEVERITY_WORDS = {"Unknown", "Low", "Medium", "High", "Very-High"}


class CefError(ValueError):
    pass


@dataclass(frozen=True)
class Cef:
    version: int
    vendor: str
    product: str
    product_version: str
    signature_id: str
    name: str
    severity: str
    extension: Dict[str, str]

    def labelled(self) -> Dict[str, str]:
        """Custom fields by their labels: ``{"eventId": "..."}`` from ``cs6Label=eventId cs6=...``."""
        out = {}
        for key, value in self.extension.items():
            if key.endswith("Label"):
                field = key[: -len("Label")]
                if field not in self.extension:
                    raise CefError(f"{key} labels a field that is absent")
                out[value] = self.extension[field]
        return out


def _unescape(text: str, allowed: Dict[str, str], where: str) -> str:
    out: List[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            if i + 1 >= len(text) or text[i + 1] not in allowed:
                raise CefError(f"{where}: undefined escape {text[i : i + 2]!r}")
            out.append(allowed[text[i + 1]])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _split_header(line: str) -> Tuple[List[str], str]:
    """The seven header fields (still escaped) and the extension text after the seventh pipe."""
    fields: List[str] = []
    start = i = 0
    while len(fields) < HEADER_FIELDS:
        if i >= len(line):
            raise CefError(f"header has {len(fields)} fields, not {HEADER_FIELDS}")
        if line[i] == "\\":
            i += 2
            continue
        if line[i] == "|":
            fields.append(line[start:i])
            start = i + 1
        i += 1
    return fields, line[start:]


def _split_extension(text: str) -> List[Tuple[str, str]]:
    """(key, escaped value) pairs. Every unescaped ``=`` ends a key: the run of key characters
    before it, which starts the text or follows one space that ends the previous value."""
    separators: List[int] = []
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "=":
            separators.append(i)
        i += 1
    pairs: List[Tuple[str, str]] = []
    key_starts: List[int] = []
    for pos in separators:
        start = pos
        while start > 0 and _KEY.fullmatch(text[start - 1]):
            start -= 1
        if start == pos:
            raise CefError(f"extension: '=' at {pos} has no key before it")
        if start > 0 and text[start - 1] != " ":
            raise CefError(f"extension: key {text[start:pos]!r} does not follow a space")
        key_starts.append(start)
    for n, pos in enumerate(separators):
        end = key_starts[n + 1] - 1 if n + 1 < len(separators) else len(text)
        if end < pos + 1:
            raise CefError(f"extension: key {text[key_starts[n] : pos]!r} runs into the next key")
        pairs.append((text[key_starts[n] : pos], text[pos + 1 : end]))
    if separators and key_starts[0] != 0:
        raise CefError(f"extension starts with text that belongs to no key: {text[: key_starts[0]]!r}")
    if not separators and text:
        raise CefError("extension holds text but no key=value pair")
    return pairs


def parse(line: str) -> Cef:
    if "\r" in line or "\n" in line:
        raise CefError("a raw CR or LF in the line")
    if not line.startswith("CEF:"):
        raise CefError("does not start with CEF:")
    header, rest = _split_header(line)
    values = [_unescape(field, {"\\": "\\", "|": "|"}, f"header field {n}") for n, field in enumerate(header)]
    version = values[0][len("CEF:") :]
    if not version.isdigit():
        raise CefError(f"version {version!r} is not a number")
    severity = values[6]
    if not (severity.isdigit() and 0 <= int(severity) <= 10) and severity not in _SEVERITY_WORDS:
        raise CefError(f"severity {severity!r} is neither 0-10 nor a severity word")
    extension: Dict[str, str] = {}
    for key, raw in _split_extension(rest):
        if key in extension:
            raise CefError(f"extension key {key!r} appears twice")
        extension[key] = _unescape(raw, {"\\": "\\", "=": "=", "n": "\n", "r": "\r"}, f"value of {key}")
    return Cef(int(version), *values[1:7], extension=extension)
