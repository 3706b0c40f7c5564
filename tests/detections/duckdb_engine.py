"""Run compiled Sigma rules on ECS NDJSON with pySigma's DuckDB backend and DuckDB itself.

Events are flattened to one column per dotted field (the backend quotes dotted names), typed by
what they hold: booleans, integers, ``@timestamp`` as a timestamp, anything else as text (lists as
their JSON text; no rule matches a list field). The packaged backend counts an ``event_count``
correlation over all time; the shipped searches count over windows of the timespan
(``tools/correlation_windows.py``), modelled here in SQL: ``SlidingDuckDB`` as Splunk's
``streamstats time_window`` (a window ending at each event), ``HoppingDuckDB`` as the ES|QL query
(windows starting every minute), ``JoinedDuckDB`` as the KQL query (the hits joined with themselves
per group, each event counted once). ``BinnedDuckDB`` counts per fixed bin, as pySigma's Splunk
(``bin``), ES|QL (``date_trunc``) and Kusto (``bin(TimeGenerated, ...)``) backends do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Tuple

import duckdb
from correlation_windows import HOP_SECONDS
from sigma.correlations import SigmaCorrelationCondition, SigmaCorrelationRule
from sigma_backend_duckdb import DuckDBBackend


class BinnedDuckDB(DuckDBBackend):
    event_count_correlation_query = {
        "default": (
            "SELECT {select_fields}{aggregate} FROM (SELECT *, time_bucket(INTERVAL '{timespan} seconds',"
            ' "@timestamp") AS sigma_bin FROM ({search}) AS hits) AS subquery{groupby}, sigma_bin'
            " HAVING {condition}"
        )
    }


class _WindowedDuckDB(DuckDBBackend):
    def parts(self, rule: SigmaCorrelationRule) -> Tuple[str, str, str, int]:
        """The rule's search, its group-by columns, its comparison and its timespan in seconds."""
        cond = rule.condition
        assert isinstance(cond, SigmaCorrelationCondition) and rule.group_by and rule.timespan
        group = ", ".join(self.escape_and_quote_field(f) for f in rule.group_by)
        test = f"{self.correlation_condition_mapping[cond.op]} {cond.count}"
        return self.convert_correlation_search(rule), group, test, rule.timespan.seconds


class SlidingDuckDB(_WindowedDuckDB):
    def convert_correlation_event_count_rule(self, rule, output_format=None, method="default"):
        search, group, test, seconds = self.parts(rule)
        return [
            f'SELECT {group} FROM (SELECT *, COUNT(*) OVER (PARTITION BY {group} ORDER BY "@timestamp"'
            f" RANGE BETWEEN INTERVAL '{seconds} seconds' PRECEDING AND CURRENT ROW) AS event_count"
            f" FROM ({search}) AS hits) AS counted WHERE event_count {test} GROUP BY {group}"
        ]


class HoppingDuckDB(_WindowedDuckDB):
    def convert_correlation_event_count_rule(self, rule, output_format=None, method="default"):
        search, group, test, seconds = self.parts(rule)
        span, hop = seconds * 1000, HOP_SECONDS * 1000
        window = f'(epoch_ms("@timestamp") - hop) // {span} * {span} + hop'
        return [
            f"SELECT DISTINCT {group} FROM (SELECT {group} FROM (SELECT *, {window} AS sigma_window"
            f" FROM ({search}) AS hits, (SELECT unnest(range(0, {span}, {hop})) AS hop) AS hops) AS expanded"
            f" GROUP BY sigma_window, {group} HAVING COUNT(*) {test}) AS windows"
        ]


class JoinedDuckDB(_WindowedDuckDB):
    def convert_correlation_event_count_rule(self, rule, output_format=None, method="default"):
        search, group, test, seconds = self.parts(rule)
        fields = [self.escape_and_quote_field(f) for f in rule.group_by]
        same = " AND ".join(f"later.{f} = event.{f}" for f in fields)
        keys = ", ".join(f"event.{f} AS {f}" for f in fields)
        return [
            f'WITH hits AS (SELECT DISTINCT ON ("event.id") * FROM ({search}) AS found)'
            f" SELECT {group} FROM (SELECT {keys}, COUNT(*) AS event_count FROM hits AS event"
            f' JOIN hits AS later ON {same} AND later."@timestamp" <= event."@timestamp"'
            f' AND later."@timestamp" > event."@timestamp" - INTERVAL \'{seconds} seconds\''
            f' GROUP BY event."event.id", {", ".join(f"event.{f}" for f in fields)}) AS counted'
            f" WHERE event_count {test} GROUP BY {group}"
        ]


def flatten(doc: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, Any]]:
    for key, value in doc.items():
        if isinstance(value, dict):
            yield from flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _column_type(values: Iterable[Any]) -> str:
    kinds = {type(v) for v in values if v is not None}
    if kinds == {bool}:
        return "BOOLEAN"
    if kinds == {int}:
        return "BIGINT"
    return "VARCHAR"


def load(ndjson: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory database with the events as table ``logs`` (read by DuckDB from a flattened copy)."""
    rows = [dict(flatten(json.loads(line))) for line in ndjson.read_text(encoding="utf-8").splitlines()]
    columns: Dict[str, List[Any]] = {}
    for row in rows:
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    types = {name: _column_type(values) for name, values in columns.items()}
    flat = ndjson.with_name(ndjson.name + ".flat")
    with flat.open("w", encoding="utf-8") as out:
        for row in rows:
            cells = {name: _cell(value, types[name]) for name, value in row.items()}
            cells["@timestamp"] = row["@timestamp"].rstrip("Z").replace("T", " ")
            out.write(json.dumps(cells) + "\n")
    types["@timestamp"] = "TIMESTAMP"
    spec = ", ".join(f"'{name}': '{kind}'" for name, kind in sorted(types.items()))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(
        f"CREATE TABLE logs AS SELECT * FROM read_json(?, format = 'newline_delimited', columns = {{{spec}}})",  # noqa: E501
        [str(flat)],
    )
    return con


def _cell(value: Any, kind: str) -> Any:
    if value is None or kind != "VARCHAR" or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def matching(con: duckdb.DuckDBPyConnection, query: str, column: str) -> List[Any]:
    """The values of ``column`` in the rows the query returns."""
    return sorted(row[0] for row in con.execute(f'SELECT "{column}" FROM ({query}) AS matches').fetchall())
