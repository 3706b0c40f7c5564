"""The list inside an answer: bare or enveloped."""

from __future__ import annotations

import pytest

from forwarder.api.envelope import extract_items
from forwarder.errors import ApiError, MalformedResponse


def test_envelopes_and_bare_lists():
    assert extract_items([1, 2], "audits") == [1, 2]
    assert extract_items({"audits": [1], "count": 1, "offset": 0}, "audits") == [1]
    assert extract_items({"data": [3]}, "audits") == [3]
    assert extract_items({"whatever": [4], "count": 1}, "audits") == [4]
    with pytest.raises(ApiError, match="token expired"):
        extract_items({"status": "error", "code": 401, "error": "token expired"}, "audits")
    with pytest.raises(MalformedResponse, match="keys: a, b"):
        extract_items({"a": 1, "b": 2}, "audits")
    with pytest.raises(MalformedResponse):
        extract_items("text", "audits")
