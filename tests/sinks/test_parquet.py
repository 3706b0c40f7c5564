"""Rows -> Parquet (forwarder/sinks/parquet.py), read back with pyarrow."""

from __future__ import annotations

import io
import json

import pytest

from forwarder.sinks.parquet import struct_field, to_parquet

pq = pytest.importorskip("pyarrow.parquet")


def read(data: bytes):
    return pq.read_table(io.BytesIO(data))


def test_a_field_only_a_later_row_holds_is_a_column():
    rows = [
        {"a": 1, "user": {"name": "x"}},
        {"a": 2},
        {"a": 3, "user": {"name": "y", "full_name": "Y Z"}, "b": "new"},
    ]

    table = read(to_parquet(rows))

    assert table.column_names == ["a", "user", "b"]
    assert table.to_pylist() == [
        {"a": 1, "user": {"name": "x", "full_name": None}, "b": None},
        {"a": 2, "user": None, "b": None},
        {"a": 3, "user": {"name": "y", "full_name": "Y Z"}, "b": "new"},
    ]


def test_a_field_no_row_fills_is_typed_string_not_null():
    table = read(to_parquet([{"privileges": [], "x": None}, {"privileges": []}]))

    assert str(table.schema.field("privileges").type) == "list<element: string>"
    assert str(table.schema.field("x").type) == "string"


def test_free_form_values_are_their_json_text_whatever_their_shapes():
    rows = [
        {"unmapped": {"changes": {"p": "reject"}}, "entity": {"name": "d", "data": {"n": 1}}},
        {"unmapped": {"changes": ["a", 2]}, "entity": {"name": "e", "data": {"n": "one"}}},
        {"entity": {"name": "f"}},
    ]

    table = read(to_parquet(rows, [("unmapped",), ("entity", "data")]))

    back = table.to_pylist()
    assert [json.loads(r["unmapped"]) if r["unmapped"] else None for r in back] == [
        {"changes": {"p": "reject"}},
        {"changes": ["a", 2]},
        None,
    ]
    assert [r["entity"]["data"] for r in back] == ['{"n":1}', '{"n":"one"}', None]


def test_clashing_types_outside_the_free_form_paths_are_refused():
    with pytest.raises(ValueError, match="clash in type"):
        to_parquet([{"a": 1}, {"a": "one"}])


def test_zstd_and_the_rows_in_the_order_given():
    data = to_parquet([{"time": t} for t in (3, 1, 2)])

    assert read(data).column("time").to_pylist() == [3, 1, 2]
    assert pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0).compression == "ZSTD"


def test_a_struct_member_is_read_back_in_row_order_and_a_missing_one_is_a_value_error():
    body = to_parquet([{"metadata": {"uid": "b", "x": 1}}, {"metadata": {"uid": "a"}}, {"y": 2}])

    assert struct_field(body, "metadata", "uid") == ["b", "a", None]
    for column, field in (("metadata", "nope"), ("y", "uid"), ("absent", "uid")):
        with pytest.raises(ValueError, match=f"no column {column}.{field}"):
            struct_field(body, column, field)
    with pytest.raises(ValueError):
        struct_field(b"not parquet", "metadata", "uid")
