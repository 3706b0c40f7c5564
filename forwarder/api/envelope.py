"""The envelope of a list answer. It is not in the spec, so it is inferred: a bare list, or an object
holding the list."""

from __future__ import annotations

from typing import Any, List

from ..errors import ApiError, MalformedResponse
from ..logs import clip

# Keys that hold the list in the enveloped style; the resource's plural comes first.
_LIST_KEYS = ("data", "items", "results", "records")


def extract_items(body: Any, plural: str) -> List[Any]:
    """The list inside a response: a bare list, or an object holding it under ``plural``."""
    if isinstance(body, list):
        return body
    if not isinstance(body, dict):
        raise MalformedResponse(f"expected a JSON list or object, got {type(body).__name__}")
    if body.get("status") == "error" or ("error" in body and plural not in body):
        detail = body.get("error_description") or body.get("error") or "error"
        raise ApiError(f"the API answered with an error body: {clip(str(detail))}", status=body.get("code"))
    for key in (plural, *_LIST_KEYS):
        value = body.get(key)
        if isinstance(value, list):
            return value
    lists = [k for k, v in body.items() if isinstance(v, list)]
    if len(lists) == 1:
        return list(body[lists[0]])
    keys = ", ".join(sorted(map(str, body))[:10])
    raise MalformedResponse(f"response object holds no {plural!r} list (keys: {keys or 'none'})")
