"""parse_record: what it refuses (too deep, not Unicode) whatever shortcut finds it, and what it keeps."""

from __future__ import annotations

import hashlib
import threading

import pytest

from forwarder import jsonutil
from forwarder.normalize import NormalizeOptions, formats, get_formatter
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


@pytest.mark.parametrize("name", formats())
def test_the_deepest_records_allowed_are_normalized_by_every_format(name):
    """Deep values in a change pair, a lone change, a role change, an unknown field, a changes that is
    not an object: each record as deep as allowed, normalized in a thread (a thread's stack is the
    smallest a runtime gives)."""
    deep = nested(MAX_DEPTH - 3)  # in the record, a change map and a pair
    records = [
        dict(BASE, changes={"dmarc_txt_record": [deep, "v=DMARC1; p=none"], "name": deep}),
        dict(BASE, action="user.update_roles", changes={"roles": [["a"], [nested(MAX_DEPTH - 4)]]}),
        dict(BASE, extra=nested(MAX_DEPTH - 1)),
        dict(BASE, changes=[nested(MAX_DEPTH - 2)]),
    ]
    formatter = get_formatter(name)
    bodies = []

    def run():
        for raw in records:
            record = parse_record(raw)
            assert depth(record.raw) == MAX_DEPTH
            bodies.append(formatter(record, NormalizeOptions(ingest_time_us=0)).body)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert len(bodies) == len(records)


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
