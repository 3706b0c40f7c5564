"""sentinel/azuredeploy.json (there is no az CLI here: the template is checked as JSON and against what
the sink sends, what the forwarder's ECS events hold, and the ASIM parser beside it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from forwarder.config.table import BY_NAME
from forwarder.events import Event
from forwarder.sinks.sentinel import SentinelOptions, row

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = json.loads((ROOT / "sentinel" / "azuredeploy.json").read_text(encoding="utf-8"))
PARSER = (ROOT / "sentinel" / "ASimAuditEventEmailAuth.kql").read_text(encoding="utf-8")
GOLDEN = sorted((ROOT / "tests" / "golden" / "ecs").glob("*-expected.json"))
GOLDEN += sorted((ROOT / "tests" / "golden" / "health").glob("*.ecs"))  # one health event each
MONITORING_METRICS_PUBLISHER = "3913510d-42f4-4e42-8a64-420c390055eb"
# What every ASIM Audit Event parser must give (the common fields and the schema's own mandatory ones).
ASIM_MANDATORY = [
    "TimeGenerated", "EventCount", "EventStartTime", "EventEndTime", "EventType", "EventResult",
    "EventProduct", "EventVendor", "EventSchema", "EventSchemaVersion", "Dvc", "Operation", "Object",
    "ObjectType",
]  # fmt: skip


def resource(kind: str) -> dict:
    (found,) = [r for r in TEMPLATE["resources"] if r["type"] == kind]
    return found


def table_columns() -> list:
    return resource("Microsoft.OperationalInsights/workspaces/tables")["properties"]["schema"]["columns"]


def data_flow() -> dict:
    (flow,) = resource("Microsoft.Insights/dataCollectionRules")["properties"]["dataFlows"]
    return flow


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_it_is_an_arm_template_of_the_table_endpoint_rule_role_and_parser():
    assert TEMPLATE["$schema"].endswith("/deploymentTemplate.json#")
    assert sorted(r["type"] for r in TEMPLATE["resources"]) == [
        "Microsoft.Authorization/roleAssignments",
        "Microsoft.Insights/dataCollectionEndpoints",
        "Microsoft.Insights/dataCollectionRules",
        "Microsoft.OperationalInsights/workspaces/savedSearches",
        "Microsoft.OperationalInsights/workspaces/tables",
    ]
    assert all(r.get("apiVersion") and r.get("name") for r in TEMPLATE["resources"])


def test_every_expression_is_closed_and_names_what_the_template_declares():
    expressions = [s for s in strings(TEMPLATE) if s.startswith("[")]
    assert expressions and all(s.endswith("]") and s.count("(") == s.count(")") for s in expressions)
    text = "\n".join(expressions)
    assert set(re.findall(r"parameters\('(\w+)'\)", text)) == set(TEMPLATE["parameters"])
    assert set(re.findall(r"variables\('(\w+)'\)", text)) == set(TEMPLATE["variables"])


def test_the_rules_input_stream_is_what_the_sink_sends():
    rule = resource("Microsoft.Insights/dataCollectionRules")["properties"]
    stream = SentinelOptions().stream
    assert list(rule["streamDeclarations"]) == [stream] == data_flow()["streams"]
    sent = json.loads(row(Event("id-1", 0, b'{"event":{"id":"id-1"}}')))
    declared = rule["streamDeclarations"][stream]["columns"]
    assert [c["name"] for c in declared] == list(sent)
    assert [c["type"] for c in declared] == ["datetime", "string", "dynamic"]
    assert data_flow()["outputStream"] == "Custom-" + TEMPLATE["variables"]["tableName"]
    assert rule["dataCollectionEndpointId"].startswith(
        "[resourceId('Microsoft.Insights/dataCollectionEndpoints'"
    )


def transform_columns() -> dict:
    """column -> its expression in the transform's extend."""
    extend = data_flow()["transformKql"].split("| extend", 1)[1].split("| project", 1)[0]
    return dict(re.findall(r"(\w+) = (.+?),?\n", extend + "\n"))


def test_the_transform_fills_every_column_of_the_table_in_its_order_with_its_type():
    projected = data_flow()["transformKql"].rsplit("| project ", 1)[1].split(", ")
    assert projected == [c["name"] for c in table_columns()]
    expressions = transform_columns()
    assert sorted(expressions) == sorted(set(projected) - {"TimeGenerated", "EventId"})
    kinds = {"tostring": "string", "todatetime": "datetime"}
    for column in table_columns():
        expression = expressions.get(column["name"])
        if expression is not None:
            function = expression.split("(", 1)[0] if "(" in expression else None
            assert column["type"] == kinds.get(function, "dynamic"), column["name"]


def golden_paths() -> set:
    found: set = set()

    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                found.add((*path, key))
                walk(item, (*path, key))

    for path in GOLDEN:
        events = json.loads(path.read_text(encoding="utf-8"))
        for event in events if isinstance(events, list) else [events]:
            walk(event, ())
    return found


def test_every_path_the_transform_reads_is_one_the_forwarders_ecs_events_hold():
    paths = golden_paths()
    read = {
        column: tuple(re.findall(r"\['([^']+)'\]", expression))
        for column, expression in transform_columns().items()
    }
    assert all(read.values())
    assert {column: path for column, path in read.items() if path not in paths} == {}


def test_the_app_may_publish_to_the_rule_and_nothing_more():
    role = resource("Microsoft.Authorization/roleAssignments")
    assert TEMPLATE["variables"]["monitoringMetricsPublisher"] == MONITORING_METRICS_PUBLISHER
    assert "variables('monitoringMetricsPublisher')" in role["properties"]["roleDefinitionId"]
    assert role["properties"]["principalType"] == "ServicePrincipal"
    assert role["scope"].startswith("[format('Microsoft.Insights/dataCollectionRules/")


def test_the_outputs_are_the_forwarders_settings():
    assert all(name in BY_NAME for name in TEMPLATE["outputs"])
    assert "sentinel+" in TEMPLATE["outputs"]["FORWARDER_SINK"]["value"]


def test_the_parser_is_deployed_as_it_is_in_the_repository():
    function = resource("Microsoft.OperationalInsights/workspaces/savedSearches")["properties"]
    assert function["query"] == PARSER and function["functionAlias"] == "ASimAuditEventEmailAuth"


@pytest.mark.parametrize("column", [c["name"] for c in table_columns()])
def test_the_asim_parser_maps_every_column_of_the_table(column):
    body = PARSER.rsplit("| project", 1)[0].split("EmailAuthAudit_CL", 1)[1]
    assert re.search(rf"\b{column}\b", body), f"{column} is not mapped by the ASIM parser"


def test_the_asim_parser_gives_the_schemas_mandatory_fields():
    projected = re.findall(r"\w+", PARSER.rsplit("| project", 1)[1])
    assert [f for f in ASIM_MANDATORY if f not in projected] == []
    assert '"AuditEvent"' in PARSER
