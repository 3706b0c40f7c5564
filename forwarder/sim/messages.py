"""The request and reply pieces every simulated endpoint shares: query parameters in, JSON replies
and the API's error envelope out."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Dict, List, NamedTuple, Optional

from ..jsonutil import dumps
from ..timeutil import format_us, parse_iso

Query = Dict[str, List[str]]


class Reply(NamedTuple):
    status: int
    body: bytes
    headers: Dict[str, str]


class BadRequest(Exception):
    """A query the API would refuse with 400; the message becomes error_description."""


def json_reply(status: int, payload: Any, headers: Optional[Dict[str, str]] = None) -> Reply:
    return Reply(status, dumps(payload), {"Content-Type": "application/json", **(headers or {})})


def error_reply(status: int, description: str, headers: Optional[Dict[str, str]] = None) -> Reply:
    error = HTTPStatus(status).phrase
    body = {"version": 1, "status": "error", "code": status, "error": error, "error_description": description}
    return json_reply(status, body, headers)


def one(query: Query, name: str) -> Optional[str]:
    """The last value of parameter ``name``, or None when absent."""
    values = query.get(name)
    return values[-1] if values else None


def int_param(query: Query, name: str, default: int, minimum: int) -> int:
    text = one(query, name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"{name} must be an integer") from None
    if value < minimum:
        raise BadRequest(f"{name} must be at least {minimum}")
    return value


def time_param(query: Query, name: str) -> Optional[str]:
    """An ISO 8601 bound in the canonical form of created_at, or None when absent."""
    text = one(query, name)
    if text is None:
        return None
    try:
        return format_us(parse_iso(text))
    except ValueError:
        raise BadRequest(f"{name} must be an ISO 8601 timestamp") from None
