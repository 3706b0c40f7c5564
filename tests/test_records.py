"""parse_record: what it refuses (too deep, not Unicode) whatever shortcut finds it, and what it keeps."""

from __future__ import annotations

import hashlib

import pytest

from forwarder import jsonutil
from forwarder.records import MAX_DEPTH, InvalidRecord, depth, parse_record

BASE = {"action": "user.update", "user": "a@example.com", "created_at": "2026-01-05T08:15:30.000000Z"}


def nested(levels: int, leaf: object = "x") -> object:
    """``levels`` containers, lists and objects in turn (the record itself is one more)."""
    value = leaf
    for n in range(levels):
        value = [value] if n % 2 else {"k": value}
    return value


def test_the_deepest_record_allowed_is_kept_and_one_level_more_is_refused():
    kept = parse_record(dict(BASE, changes=nested(MAX_DEPTH - 1)))
    assert depth(kept.raw) == MAX_DEPTH
    with pytest.raises(InvalidRecord, match=f"nested more than {MAX_DEPTH} levels"):
        parse_record(dict(BASE, changes=nested(MAX_DEPTH)))


def test_brackets_in_text_or_side_by_side_are_not_depth():
    wide = {"list": [[1]] * 200, "text": "{[" * 500}
    record = parse_record(dict(BASE, changes=wide))
    assert record.canonical == jsonutil.canonical(record.raw)
    assert hashlib.sha256(record.canonical).hexdigest() == record.event_id


def test_too_deep_is_named_first_when_the_text_is_also_not_unicode():
    with pytest.raises(InvalidRecord, match="nested more than"):
        parse_record(dict(BASE, changes=nested(MAX_DEPTH + 5, "\ud800")))
    with pytest.raises(InvalidRecord, match="not valid Unicode"):
        parse_record(dict(BASE, changes=nested(3, "\ud800")))
