"""The tenant-wide delivered-ids index as a document: bounded by the window and in size, compact, and
never silently reset."""

from __future__ import annotations

import pytest

from forwarder.errors import StateError
from forwarder.state.delivered import MAX_IDS, DeliveredIndex


def ids(*numbers: int) -> list:
    return [f"{n:024x}".ljust(64, "e") for n in numbers]


def test_an_index_holds_what_was_added_until_the_window_has_passed():
    index = DeliveredIndex().adding(ids(1, 2), now_s=1000, window_s=60)
    assert index.holds(ids(1)[0]) and not index.holds(ids(3)[0])
    later = index.adding(ids(3), now_s=1060, window_s=60)
    assert later.holds(ids(1)[0])  # accepted exactly a window ago
    gone = later.adding([], now_s=1061, window_s=60)
    assert not gone.holds(ids(1)[0]) and gone.holds(ids(3)[0])
    assert index.holds(ids(1)[0])  # adding leaves the index it was called on alone


def test_past_the_size_bound_the_oldest_go_first():
    index = DeliveredIndex().adding(ids(*range(MAX_IDS)), now_s=0, window_s=60)
    index = index.adding(ids(0), now_s=1, window_s=60)  # held already: keeps its place
    index = index.adding(ids(MAX_IDS, MAX_IDS + 1), now_s=2, window_s=60)
    assert len(index.entries) == MAX_IDS and len(index.packed) == 16 * MAX_IDS
    assert not index.holds(ids(0)[0]) and not index.holds(ids(1)[0]) and index.holds(ids(2)[0])
    assert index.holds(ids(MAX_IDS + 1)[0])
    assert DeliveredIndex.from_doc(index.to_doc(), "here") == index


def test_the_document_round_trips_at_sixteen_bytes_an_id_in_base64():
    index = DeliveredIndex().adding(ids(*range(300)), now_s=1_767_225_600, window_s=3600)
    doc = index.to_doc()
    assert DeliveredIndex.from_doc(doc, "here") == index
    assert len(doc["ids"]) == 300 * 16 * 4 // 3


@pytest.mark.parametrize(
    "doc, problem",
    [
        ([], "not a JSON object"),
        ({"schema": 2, "count": 0, "ids": ""}, "schema version 2"),
        ({"schema": 1, "count": 0}, "corrupt"),
        ({"schema": 1, "count": 1, "ids": "AAAA"}, "corrupt"),  # 3 bytes: not whole entries
        ({"schema": 1, "count": 0, "ids": "!!!!"}, "corrupt"),
        ({"schema": 1, "count": 5, "ids": ""}, "count 5, 0 ids"),
        ({"schema": 1, "count": 2, "ids": "A" * 43 + "="}, "2 ids, 1 different"),  # one id twice
    ],
)
def test_a_corrupt_document_is_an_error_naming_its_location(doc, problem):
    with pytest.raises(StateError, match=problem) as failure:
        DeliveredIndex.from_doc(doc, "s3://bucket/tenant/delivered-ids")
    assert "s3://bucket/tenant/delivered-ids" in str(failure.value)
