"""HTTP header values from configuration: ``FORWARDER_SINK_HEADERS`` into a name -> value dict.

Its own module (no sink, no ``requests``) so the configuration check parses headers without loading
an HTTP sink, and every HTTP sink takes them from the same place.
"""

from __future__ import annotations

from typing import Dict

from .logs import quoted


def parse_headers(text: str) -> Dict[str, str]:
    """``Name: value; Other: value`` (FORWARDER_SINK_HEADERS) into a dict; ValueError on a bad pair."""
    headers: Dict[str, str] = {}
    for part in filter(None, (item.strip() for item in text.split(";"))):
        name, sep, value = part.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or not all(33 <= ord(c) < 127 and c != ":" for c in name):
            raise ValueError(f"expected 'Name: value' pairs separated by ';' (got {quoted(name or part)})")
        if not all(32 <= ord(c) < 127 for c in value):
            raise ValueError(f"the value of header {quoted(name)} holds characters a header cannot carry")
        headers[name] = value
    return headers
