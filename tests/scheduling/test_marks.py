"""The scheduler document: packed, read back whole, and refused (not misread) when it is not ours."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from forwarder.scheduling.marks import MAX_NAMES, Book, IndexMark, Marks, read_marks


def test_a_book_round_trips_through_its_document():
    book = Book(
        streams={"user/a@x": Marks(10, 5), "user/b@x": Marks(10, 7, 3.25), "domain/x": Marks(None, None)},
        users=(7, ("a@x", "b@x")),
        actors={"ghost@y": 3},
        departed={"old@x": 4},
        bucket=(1.5, -2.0),
        orgwide={"user": IndexMark(True, 9, 8_000_000, 7_000_000), "domain": IndexMark(False, 9)},
        pending=("user/a@x",),
    )
    assert read_marks(book.to_doc()) == book
    assert read_marks(None) == Book()


def test_org_wide_entries_not_understood_are_left_out():
    body = {
        "orgwide": {"user": [1, 2, None, None], "domain": "x", "x": [True, 5, "a", None]},
        "pending": "user/a",
    }
    packed = base64.b64encode(zlib.compress(json.dumps(body).encode())).decode()
    book = read_marks({"schema": 1, "packed": packed})
    assert book.orgwide == {"x": IndexMark(True, 5)} and book.pending == ()


def test_a_thousand_streams_and_users_pack_small():
    keys = [f"user/user{i}@acme-widgets.example" for i in range(1000)]
    book = Book({k: Marks(1_800_000_000 + i, None) for i, k in enumerate(keys)}, (1, tuple(keys)))
    assert len(book.to_doc()["packed"]) < 40_000  # of ~80 KB as JSON: a DynamoDB item holds 400 KB


def test_the_name_lists_keep_the_most_recent():
    book = Book(actors={f"a{i}@x": i for i in range(MAX_NAMES + 5)})
    kept = read_marks(book.to_doc()).actors
    assert len(kept) == MAX_NAMES and "a0@x" not in kept and f"a{MAX_NAMES + 4}@x" in kept


@pytest.mark.parametrize(
    "doc", [{"schema": 2, "packed": ""}, {"schema": 1}, {"schema": 1, "packed": "not base64!"}]
)
def test_a_document_that_is_not_ours_is_refused(doc):
    with pytest.raises(ValueError):
        read_marks(doc)


def test_a_stream_heat_that_is_not_a_sane_number_counts_as_one_sign():
    doc = Book(streams={"user/a@x": Marks(1, 2, 4.0)}).to_doc()
    body = read_marks(doc)
    assert body.streams["user/a@x"].heat == 4.0
    for bad in ("hot", True, -1, None):
        packed = {"streams": {"user/a@x": [1, 2, bad]}}
        text = json.dumps(packed).encode()
        doc = {"schema": 1, "packed": base64.b64encode(zlib.compress(text)).decode()}
        assert read_marks(doc).streams["user/a@x"] == Marks(1, 2, 1.0)
