"""A loopback stand-in for Fluent Bit's HTTP input (``in_http``), as its ``http_prot.c`` answers.

* ``Content-Type`` must be ``application/json`` (optionally followed by ``;`` or a space and
  parameters) or ``application/x-www-form-urlencoded``; anything else, ``application/x-ndjson``
  included, gets 400 ``error: invalid 'Content-Type'``, and no header at all 400 ``error: header
  'Content-Type' is not set``.
* ``Content-Encoding: gzip`` is undone.
* The body must be one JSON object or an array of objects (``invalid payload`` otherwise); each
  object becomes a record.
* Success is ``201`` with an empty body (the input's default ``successful_response_code``).

``max_body``: a body over this many bytes gets 413, as from a proxy in front of the input.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

from .http_collector import BadBody, LoopbackReceiver, Reply, TooLarge, decode_body

_LIMIT = 4 * 1024 * 1024  # the input's default buffer_max_size


def _text_reply(status: int, text: str) -> Reply:
    return status, text.encode("ascii"), {"Content-Type": "text/plain"}


def _is_json_type(value: str) -> bool:
    value = value.lower()
    return value == "application/json" or value.startswith(("application/json;", "application/json "))


class FluentBitHttpInput(LoopbackReceiver):
    name = "fluent-bit-http"

    def __init__(self) -> None:
        super().__init__()
        self.max_body = _LIMIT
        self._records: List[Dict[str, Any]] = []

    @property
    def url(self) -> str:
        return self.http_url + "/audit"

    def records(self) -> List[Dict[str, Any]]:
        with self.lock:
            return list(self._records)

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Reply:
        if len(raw) > self.max_body:
            return _text_reply(413, "Request Entity Too Large\n")
        if method != "POST":
            return _text_reply(400, "error: invalid HTTP method\n")
        kind = headers.get("content-type")
        if kind is None:
            return _text_reply(400, "error: header 'Content-Type' is not set\n")
        if not _is_json_type(kind):
            return _text_reply(400, "error: invalid 'Content-Type'\n")
        try:
            payload = json.loads(decode_body(headers, raw, _LIMIT))
        except (TooLarge, BadBody, ValueError):
            return _text_reply(400, "error: invalid payload\n")
        records = payload if isinstance(payload, list) else [payload]
        if not records or not all(isinstance(record, dict) for record in records):
            return _text_reply(400, "error: invalid payload\n")
        with self.lock:
            self._records.extend(records)
        return 201, b"", {}
