"""The detections on the forwarder's health events (tools/health_detections.py), run on the health
events real runs send: three forwarders share one SIEM (a file sink) - a healthy one, one whose runs
stopped, one whose runs cannot keep up with the trail (its call budget spent mid-stream) - and a
fourth whose credentials were revoked. The Sigma rules run with pySigma's DuckDB backend; the
silence rule's shipped ES|QL, SPL and KQL run in DuckDB through a literal translation of their pipes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List

import pytest
import yaml
from compile_detections import compile_rules, main
from health_detections import ELASTIC_OUT, NATIVE, RULES, Health, native_rules
from sigma_backend_duckdb import DuckDBBackend

from forwarder.app import run_once
from forwarder.health import forwarder_id
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import format_us, now_us
from tests.e2e.helpers import settings_for
from tests.fakes import NO_WAITS

from .duckdb_engine import load, matching

MINUTE_US = 60_000_000
WRONG_SECRET = "revoked-client-secret-4f1d"


@pytest.fixture(scope="module")
def siem(tmp_path_factory) -> Dict[str, object]:
    """Every forwarder's runs into one file; the forwarders' ids and when the last run finished."""
    tmp = tmp_path_factory.mktemp("health")
    path = tmp / "siem.ndjson"
    org = generate_org(3)
    busiest = max(org.users, key=lambda u: len(org.records_for("user", u.email, now_us()))).email
    forwarders = {
        # a 5-minute schedule, every run fine
        "healthy": dict(FORWARDER_SCHEDULE_INTERVAL="5m"),
        # a 1-minute schedule: its last run is then more than three intervals old
        "stopped": dict(FORWARDER_SCHEDULE_INTERVAL="1m"),
        # 3 API calls a run, 5 records a pass: a year of one busy user's trail is far away
        "lagging": dict(
            FORWARDER_SCHEDULE_INTERVAL="5m",
            FORWARDER_USERS=busiest,
            FORWARDER_OBJECT_TYPES="user",
            FORWARDER_MAX_RECORDS_PER_PASS="5",
            FORWARDER_RUN_BUDGET_CALLS="3",
        ),
        "failing": dict(FORWARDER_SCHEDULE_INTERVAL="5m", FORWARDER_CLIENT_SECRET=WRONG_SECRET),
    }
    ids = {}
    with Simulator(org) as sim:
        for name, extra in forwarders.items():
            state = str(tmp / name)
            ids[name] = forwarder_id(state, "")
            settings = settings_for(
                sim.base_url, path.as_uri(), state, FORWARDER_HEALTH_EVENTS="true", **extra
            )
            for _ in range(2):
                run_once(settings, pace=NO_WAITS)
    return {"path": path, "ids": ids, "last": now_us()}


def health_lines(path: Path) -> List[dict]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [e for e in lines if e["event"].get("dataset") == "emailauth.forwarder.health"]


def test_every_run_sent_one_health_event_even_failed_ones(siem):
    events = health_lines(siem["path"])
    by_forwarder: Dict[str, List[str]] = {}
    for event in events:
        by_forwarder.setdefault(event["service"]["id"], []).append(event["emailauth"]["forwarder"]["status"])
    ids = siem["ids"]
    assert by_forwarder == {
        ids["healthy"]: ["success", "success"],
        ids["stopped"]: ["success", "success"],
        ids["lagging"]: ["success", "success"],
        ids["failing"]: ["failure", "failure"],
    }
    assert WRONG_SECRET not in siem["path"].read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def con(siem):
    return load(siem["path"])


def sigma_hits(con, rule: str) -> List[str]:
    """The forwarder ids whose health events the Sigma rule ``rule`` matches."""
    queries = {
        Path(str(c.rule.source.path)).stem: c.query for c in compile_rules(DuckDBBackend, source=RULES)
    }
    return sorted(set(matching(con, queries[rule], "service.id")))


def test_the_lag_rule_fires_on_the_forwarder_that_cannot_keep_up_only(siem, con):
    assert sigma_hits(con, "emailauth_forwarder_lagging") == [siem["ids"]["lagging"]]


def test_the_failure_rule_fires_on_the_failing_forwarder_only(siem, con):
    assert sigma_hits(con, "emailauth_forwarder_run_failed") == [siem["ids"]["failing"]]


def esql_to_sql(query: str, now: str) -> str:
    """The subset of ES|QL the silence rule uses, pipe by pipe, as DuckDB SQL: from, where, stats ...
    by, eval. Dotted and @ names are quoted; anything else is refused rather than guessed."""

    def names(code: str) -> str:
        code = code.replace("==", "=").replace("now()", f"TIMESTAMP '{now}'")
        return re.sub(r"(?<![\w'])([A-Za-z_]\w*(?:\.\w+)+|@timestamp)", r'"\1"', code)

    def expression(text: str) -> str:
        parts = re.split(r'("[^"]*")', text)  # string literals (odd places) become SQL strings
        return "".join(f"'{p[1:-1]}'" if i % 2 else names(p) for i, p in enumerate(parts))

    pipes = [p.strip() for p in query.split("|")]
    assert pipes[0].startswith("from logs-emailauth.audit-*"), pipes[0]
    sql = "SELECT * FROM logs"
    for pipe in pipes[1:]:
        verb, _, rest = pipe.partition(" ")
        if verb == "where":
            sql = f"SELECT * FROM ({sql}) WHERE {expression(rest)}"
        elif verb == "eval":
            name, _, value = rest.partition("=")
            sql = f"SELECT *, {expression(value.strip())} AS {name.strip()} FROM ({sql})"
        elif verb == "stats":
            aggregates, _, group = rest.partition(" by ")
            items = [a.split("=", 1) for a in aggregates.split(", ")]
            select = ", ".join(f"{expression(v.strip())} AS {n.strip()}" for n, v in items)
            sql = f"SELECT {expression(group)}, {select} FROM ({sql}) GROUP BY {expression(group)}"
        else:
            raise AssertionError(f"ES|QL verb not translated: {verb}")
    return sql


def spl_to_sql(search: str, now: str) -> str:
    """The subset of SPL the silence rule uses, as DuckDB SQL: the sourcetype the health events
    have in Splunk (here: their dataset), stats latest(...) AS ... BY, eval, where. Anything else
    is refused rather than guessed."""

    def expression(text: str) -> str:
        text = text.replace("now()", f"epoch(TIMESTAMP '{now}')").replace("_time", 'epoch("@timestamp")')
        return re.sub(r"(?<![\w'])([A-Za-z_]\w*(?:\.\w+)+)", r'"\1"', text)

    pipes = [p.strip() for p in " ".join(search.split()).split("|")]
    assert pipes[0] == 'sourcetype="emailauth:audit:health"', pipes[0]
    sql = "SELECT * FROM logs WHERE \"event.dataset\" = 'emailauth.forwarder.health'"
    for pipe in pipes[1:]:
        verb, _, rest = pipe.partition(" ")
        if verb == "stats":
            aggregates, _, group = rest.partition(" BY ")
            items = re.findall(r"latest\(([^)]*)\) AS (\w+)", aggregates)
            assert items and len(items) == aggregates.count(" AS "), aggregates
            select = ", ".join(f'arg_max({expression(f)}, "@timestamp") AS {n}' for f, n in items)
            sql = f"SELECT {expression(group)}, {select} FROM ({sql}) GROUP BY {expression(group)}"
        elif verb == "eval" and "strftime(" in rest:
            continue  # formatting of a column for the alert table: no bearing on what matches
        elif verb == "eval":
            name, _, value = rest.partition("=")
            sql = f"SELECT *, {expression(value)} AS {name} FROM ({sql})"
        elif verb == "where":
            sql = f"SELECT * FROM ({sql}) WHERE {expression(rest)}"
        else:
            raise AssertionError(f"SPL command not translated: {verb}")
    return sql


# The DCR transform's columns (sentinel/azuredeploy.json) back to the ECS fields they hold
SENTINEL_COLUMNS = {"TimeGenerated": "@timestamp", "EventDataset": "event.dataset", "ServiceId": "service.id"}


def kql_to_sql(query: str, now: str) -> str:
    """The subset of KQL the silence rule uses, over the table's columns, as DuckDB SQL: where,
    summarize ... by, extend with datetime_diff. Anything else is refused rather than guessed."""

    def expression(text: str) -> str:
        text = re.sub(
            r'datetime_diff\("second", now\(\), (\w+)\)', rf"date_diff('second', \1, TIMESTAMP '{now}')", text
        )
        text = re.sub(r'"([^"]*)"', r"'\1'", text).replace("==", "=").replace("toint(", "(")
        text = re.sub(r"\bForwarder\.([\w.]+)", r'"emailauth.forwarder.\1"', text)
        for column, field in SENTINEL_COLUMNS.items():
            text = re.sub(rf"\b{column}\b", f'"{field}"', text)
        return text

    pipes = [p.strip() for p in " ".join(query.split()).split("|")]
    assert pipes[0] == "EmailAuthAudit_CL", pipes[0]
    sql = "SELECT * FROM logs"
    for pipe in pipes[1:]:
        verb, _, rest = pipe.partition(" ")
        if verb == "where":
            sql = f"SELECT * FROM ({sql}) WHERE {expression(rest)}"
        elif verb == "extend":
            name, _, value = rest.partition(" = ")
            sql = f"SELECT *, {expression(value)} AS {name} FROM ({sql})"
        elif verb == "summarize":
            aggregates, _, group = rest.partition(" by ")
            items = [a.split(" = ", 1) for a in aggregates.split(", ")]
            select = ", ".join(f"{expression(v)} AS {n}" for n, v in items)
            sql = f"SELECT {expression(group)}, {select} FROM ({sql}) GROUP BY {expression(group)}"
        else:
            raise AssertionError(f"KQL operator not translated: {verb}")
    return sql


def silent(con, at_us: int, siem_language: str) -> List[str]:
    (rule,) = native_rules()
    now = format_us(at_us).rstrip("Z").replace("T", " ")
    if siem_language == "esql":
        query = esql_to_sql(rule["esql"]["query"], now)
    elif siem_language == "kql":
        query = kql_to_sql(rule["kql"]["query"], now)
    else:
        query = spl_to_sql(rule["splunk"]["search"], now)
    return sorted(row[0] for row in con.execute(query).fetchall())


@pytest.mark.parametrize("siem_language", ["esql", "spl", "kql"])
def test_the_silence_rule_fires_when_a_forwarder_stops_running(siem, con, siem_language):
    last = siem["last"]
    # right after the runs: nobody is silent
    assert silent(con, last, siem_language) == []
    # ten minutes without a run: three of the 1-minute forwarder's intervals, two of the others'
    assert silent(con, last + 10 * MINUTE_US, siem_language) == [siem["ids"]["stopped"]]
    # past fifteen minutes every forwarder that stopped running is reported, failing or not
    assert silent(con, last + 16 * MINUTE_US, siem_language) == sorted(siem["ids"].values())


def test_the_silence_rule_says_the_same_in_splunk_and_elastic():
    (rule,) = native_rules()
    spl, esql, kql = rule["splunk"]["search"], rule["esql"]["query"], rule["kql"]["query"]
    assert f"SilentSeconds > {rule['intervals']} * coalesce(Interval, 300)" in " ".join(kql.split())
    for text in (spl, esql):
        assert f"silent_seconds > {rule['intervals']} * coalesce(interval, 300)" in " ".join(text.split())
        assert "emailauth.forwarder.schedule_interval_seconds" in text and "service.id" in text
    assert spl.startswith('sourcetype="emailauth:audit:health"')
    assert 'event.dataset == "emailauth.forwarder.health"' in esql


def test_each_health_rule_is_complete():
    rules = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(RULES.glob("*.yml"))]
    rules += [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(NATIVE.glob("*.yml"))]
    assert len(rules) == 3 and len({r["id"] for r in rules}) == 3
    for rule in rules:
        assert rule["level"] in ("low", "medium", "high") and rule["falsepositives"] and rule["description"]
        assert rule.get("logsource", {"product": "emailauth", "service": "health"}) == {
            "product": "emailauth",
            "service": "health",
        }


def test_the_committed_elastic_health_rules_are_up_to_date():
    assert ELASTIC_OUT.read_text(encoding="utf-8") == Health.compile().elastic_ndjson(), (
        "run: .venv/bin/python tools/compile_detections.py --elastic"
    )
    rows = [json.loads(line) for line in ELASTIC_OUT.read_text(encoding="utf-8").splitlines()]
    assert {r["name"] for r in rows} == {
        "EmailAuth forwarder run failed",
        "EmailAuth forwarder lagging behind the audit trail",
        "EmailAuth forwarder went silent",
    }
    for row in rows:
        assert row["enabled"] is False and row["query"].startswith("from logs-emailauth.audit-*")
        assert 'event.dataset=="emailauth.forwarder.health"' in row["query"].replace(" ", "")


def test_the_add_on_gets_the_health_searches_beside_the_audit_ones(tmp_path):
    out = tmp_path / "savedsearches.conf"
    assert main(["--splunk", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    for title in ("EmailAuth forwarder run failed", "EmailAuth forwarder went silent"):
        assert f"[{title}]" in text
    assert text.count('sourcetype="emailauth:audit:health"') == 3


def test_the_committed_sentinel_health_rules_are_up_to_date_and_read_the_tables_columns():
    from health_detections import SENTINEL_OUT

    from tests.sentinel.test_azuredeploy import golden_paths, table_columns

    assert SENTINEL_OUT.read_text(encoding="utf-8") == Health.compile().sentinel_template(), (
        "run: .venv/bin/python tools/compile_detections.py --sentinel"
    )
    resources = json.loads(SENTINEL_OUT.read_text(encoding="utf-8"))["resources"]
    assert len(resources) == 3 and all(r["properties"]["enabled"] is False for r in resources)
    columns, paths = {c["name"] for c in table_columns()}, golden_paths()
    for resource in resources:
        query = resource["properties"]["query"]
        assert query.startswith(
            "EmailAuthAudit_CL\n"
        ) and 'EventDataset =~ "emailauth.forwarder.health"' in query.replace("==", "=~")
        read = set(re.findall(r"\b([A-Z]\w+)(?:\.[\w.]+)?\b", query.split("\n", 1)[1])) - {
            "LastSeen",
            "Interval",
            "SilentSeconds",
        }
        assert read <= columns, read - columns
        for path in re.findall(r"\bForwarder\.([\w.]+)", query):
            assert ("emailauth", "forwarder", *path.split(".")) in paths, path
