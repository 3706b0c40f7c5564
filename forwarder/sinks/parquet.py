"""Rows (JSON objects) -> one Parquet file, as data lakes read it. Pure; pyarrow (the
``securitylake`` extra) is imported only here and only when called.

* Columns. The schema is inferred from every row, not the first: a field only a later row holds
  (a ``user_result.full_name``, an ``entity.data``) is a column all the same, null in the rows
  without it. A field that is null in every row (an empty list's items) is typed string, so no
  column is of Parquet's null type, which Athena cannot read.
* Free-form values (``json_paths``: OCSF ``object``/``json_t`` attributes, whose members differ
  from row to row and may clash in type) are written as their JSON text, one string column each.
* Layout. Rows in the order given (the caller sorts them by time); zstd compression, data pages
  of at most 1 MiB, one row group per 100,000 rows: what Security Lake's guide asks of custom
  sources' objects.
"""

from __future__ import annotations

import io
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ..jsonutil import dumps

ROW_GROUP_ROWS = 100_000
DATA_PAGE_BYTES = 1024 * 1024


def with_json_text(row: Mapping[str, Any], path: Tuple[str, ...]) -> Dict[str, Any]:
    """``row`` with the value at ``path`` (when there) replaced by its JSON text (a new dict along
    the path; the rest shared)."""
    head, rest = path[0], path[1:]
    if head not in row or row[head] is None:
        return dict(row)
    copy = dict(row)
    if rest:
        if isinstance(row[head], Mapping):
            copy[head] = with_json_text(row[head], rest)
    else:
        copy[head] = dumps(row[head]).decode("utf-8")
    return copy


def _no_null_types(kind: Any) -> Any:
    """``kind`` with every null type (a field no row fills) made string."""
    import pyarrow as pa

    if pa.types.is_null(kind):
        return pa.string()
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_no_null_types(field.type)) for field in kind])
    if pa.types.is_list(kind):
        return pa.list_(_no_null_types(kind.value_type))
    return kind


def to_parquet(rows: Sequence[Mapping[str, Any]], json_paths: Sequence[Tuple[str, ...]] = ()) -> bytes:
    """The Parquet file of ``rows``. ValueError when a field holds values of clashing types in two
    rows (a number in one, text in another) outside ``json_paths``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    prepared = list(rows)
    for path in json_paths:
        prepared = [with_json_text(row, path) for row in prepared]
    try:
        inferred = pa.array(prepared)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"rows whose fields clash in type: {exc}") from exc
    table = pa.Table.from_struct_array(inferred.cast(_no_null_types(inferred.type)))
    out = io.BytesIO()
    pq.write_table(
        table,
        out,
        compression="zstd",
        row_group_size=ROW_GROUP_ROWS,
        data_page_size=DATA_PAGE_BYTES,
    )
    return out.getvalue()


def struct_field(body: bytes, column: str, field: str) -> List[Any]:
    """The values of ``column.field`` (a struct column's member) in every row of the Parquet file
    ``body``, reading that column only. ValueError when the file is not Parquet or has no such field."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        values = pq.read_table(io.BytesIO(body), columns=[column]).column(0).combine_chunks()
        return list(values.field(field).to_pylist())
    except (pa.ArrowException, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"no column {column}.{field} to read: {exc}") from exc
