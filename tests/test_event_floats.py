"""A record holding floats gets the same event id and the same event bytes whether orjson is
installed (Lambda, CLI) or not (the Splunk add-on's pure Python)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forwarder import jsonutil
from forwarder.normalize import NormalizeOptions, formats, get_formatter
from forwarder.records import parse_record

OPTIONS = NormalizeOptions(ingest_time_us=1_767_600_000_000_000)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
VALUES = st.recursive(
    FLOATS | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


def events(body: bytes) -> list:
    """Each format's event of the record ``body`` as read from the wire."""
    record = parse_record(jsonutil.loads(body))
    return [record.event_id] + [get_formatter(name)(record, OPTIONS) for name in formats()]


@pytest.mark.skipif(not jsonutil.HAVE_ORJSON, reason="orjson is not installed (the pure-Python build)")
@settings(max_examples=150, deadline=None)
@given(
    action=st.sampled_from(["user.update", "login", "domain.update"]),
    changes=st.dictionaries(
        st.sampled_from(["ttl", "pct", "score", "x"]), st.tuples(VALUES, VALUES), max_size=3
    ),
    extra=FLOATS,
)
def test_a_record_with_floats_is_the_same_event_in_every_runtime(action, changes, extra):
    raw = {
        "action": action,
        "user": "a@example.com",
        "created_at": "2026-01-05T08:15:30.000000Z",
        "changes": {key: list(pair) for key, pair in changes.items()},
        "score": extra,
    }
    body = jsonutil.dumps(raw)
    with_orjson = events(body)
    original, jsonutil._orjson = jsonutil._orjson, None
    try:
        assert jsonutil.dumps(raw) == body
        assert events(body) == with_orjson
    finally:
        jsonutil._orjson = original
