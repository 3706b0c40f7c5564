"""The Sigma rules as Microsoft Sentinel scheduled analytics rules (tools/compile_detections.py
--sentinel, pySigma's Kusto backend): committed up to date, every rule compiled, each reading only
columns of EmailAuthAudit_CL (sentinel/azuredeploy.json) and paths the forwarder's events hold."""

from __future__ import annotations

import json
import re

from compile_detections import RULES, SENTINEL_OUT, compile_rules, load, sentinel_backend, sentinel_rules
from sigma.correlations import SigmaCorrelationRule

from tests.sentinel.test_azuredeploy import golden_paths, table_columns

RULE_FILES = sorted(RULES.glob("*.yml"))
# the tactics the rules tag
TACTICS = {
    "Persistence",
    "PrivilegeEscalation",
    "DefenseEvasion",
    "Impact",
    "CredentialAccess",
    "InitialAccess",
}


def rules() -> list:
    return json.loads(SENTINEL_OUT.read_text(encoding="utf-8"))["resources"]


def test_the_committed_sentinel_rules_are_up_to_date():
    assert SENTINEL_OUT.read_text(encoding="utf-8") == sentinel_rules(compile_rules(sentinel_backend)), (
        "run: .venv/bin/python tools/compile_detections.py --sentinel"
    )


def test_every_rule_is_a_disabled_hourly_rule_over_the_rows_ingested_since_the_last_run():
    blocks = {ref.rule.id for r in load().rules if isinstance(r, SigmaCorrelationRule) for ref in r.rules}
    assert blocks and len(rules()) == len(RULE_FILES) - len(
        blocks
    )  # a correlation's blocks: no rule of their own
    for rule in rules():
        props = rule["properties"]
        assert rule["type"] == "Microsoft.SecurityInsights/alertRules" and rule["kind"] == "Scheduled"
        assert props["enabled"] is False
        single = "EmailAuthAudit_CL\n| where ingestion_time() > ago(1h)\n| where "
        if not props["query"].startswith("let sigma_events = "):  # correlations: test_correlation_windows
            assert props["query"].startswith(single)
        assert props["queryFrequency"] == "PT1H" and props["queryPeriod"] == "P14D"
        assert props["severity"] in ("Informational", "Low", "Medium", "High")
        assert set(props["tactics"]) <= TACTICS  # (a threat-hunting rule has none)
        assert all(re.fullmatch(r"T\d{4}", t) for t in props["techniques"])
    by_name = {r["properties"]["displayName"]: r["properties"] for r in rules()}
    burst = by_name["EmailAuth role changes burst by one actor"]["query"]
    assert burst.startswith(
        "let sigma_events = EmailAuthAudit_CL\n"
        "| where ingestion_time() > ago(105m)\n"
        '| where EventAction =~ "user.update_roles"\n'
        "| extend sigma_time = coalesce(EventTime, TimeGenerated), sigma_ingested = ingestion_time()\n"
    )
    assert "bin(" not in burst and burst.endswith("| summarize event_count = max(event_count) by ActorUserId")
    assert "tobool(Audit.roles.admin_granted) == true" in by_name["EmailAuth admin role granted"]["query"]


def test_every_column_and_audit_path_a_rule_reads_exists():
    columns = {c["name"] for c in table_columns()} | {"event_count"}
    audit = {path[2:] for path in golden_paths() if path[:2] == ("emailauth", "audit")}
    for rule in rules():
        query = re.sub(r"\bEmailAuthAudit_CL\b", "", rule["properties"]["query"])
        query = re.sub(r'"(?:[^"\\]|\\.)*"', '""', query)  # string literals hold no column
        query = re.sub(r"\b\d+[mh]\b", "", query)  # timespans
        words = set(re.findall(r"\b[A-Za-z_][\w.]*\b", query)) - {
            "where", "and", "or", "not", "tobool", "true", "false", "isnotempty", "summarize", "count",
            "by", "in", "let", "extend", "project", "join", "kind", "inner", "on", "ago", "coalesce",
            "ingestion_time", "arg_min", "max", "event_count", "last_ingested",
        }  # fmt: skip
        words = {w for w in words if not w.startswith("sigma_")}  # a correlation's own columns
        for word in words:
            head, _, path = word.partition(".")
            assert head in columns, (rule["properties"]["displayName"], word)
            if path:
                assert tuple(path.split(".")) in audit, (rule["properties"]["displayName"], word)
