"""The Google SecOps YARA-L rules tools/compile_detections.py writes into secops/rules: current, one per
alerting rule, and reading the UDM fields where the UDM format (forwarder/normalize/udm.py) puts what
the Sigma rules read in ECS, so they match on UDM events what the Sigma rules match on ECS events
(which test_rules_on_events.py proves on the scenario organization)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from compile_detections import SECOPS_OUT, secops_field, secops_rules

from forwarder.normalize import NormalizeOptions, get_formatter
from forwarder.records import parse_record
from forwarder.sim.scenarios import seeded_org
from forwarder.timeutil import now_us

from .test_compile import RULE_FILES, documents, rule_fields

ORG, SEEDED = seeded_org(31, now_us())
OPTIONS = NormalizeOptions(ingest_time_us=now_us())


def test_the_committed_secops_rules_are_up_to_date():
    committed = {path.name: path.read_text(encoding="utf-8") for path in SECOPS_OUT.glob("*.yaral")}
    assert committed == secops_rules(), "run: .venv/bin/python tools/compile_detections.py --secops"


def test_every_alerting_rule_has_one_yaral_rule_named_after_its_file():
    # a correlation's building block has no alert of its own
    fed = {name for path in RULE_FILES for name in documents(path)[0].get("correlation", {}).get("rules", [])}
    assert sorted(secops_rules()) == sorted(f"{p.stem}.yaral" for p in RULE_FILES if p.stem not in fed)
    for name, text in secops_rules().items():
        assert text.count(f"rule {name[: -len('.yaral')]} {{") == 1
        assert '$e.metadata.product_name = "EmailAuth Platform"' in text
        assert re.search(r"\n  condition:\n    (\$e|#e >= \d+)\n}\n$", text)


def test_the_burst_correlation_counts_per_actor_over_ten_minutes():
    burst = secops_rules()["emailauth_role_change_burst.yaral"]
    assert "$e.principal.user.userid = $user_id" in burst
    assert "match:\n    $user_id over 10m" in burst and "#e >= 5" in burst


def udm_value(doc: dict, path: str) -> Any:
    match = re.fullmatch(r'additional\.fields\["([^"]+)"\]', path)
    if match:
        return doc.get("additional", {}).get("fields", {}).get(match.group(1))
    for name in path.split("."):
        doc = doc.get(name, {}) if isinstance(doc, dict) else {}
    return doc or None


def ecs_value(doc: dict, path: str) -> Any:
    for name in path.split("."):
        doc = doc.get(name, {}) if isinstance(doc, dict) else {}
    if isinstance(doc, bool):
        return "true" if doc else "false"
    return doc if doc not in ({}, None) else None


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.stem)
def test_udm_events_hold_each_field_a_rule_reads_where_the_rule_reads_it(path):
    import json

    ecs, udm = get_formatter("ecs"), get_formatter("udm")
    fields = rule_fields(documents(path)[0])
    checked = 0
    for seeded in SEEDED:
        record = parse_record(seeded.record)
        ecs_doc = json.loads(ecs(record, OPTIONS).body)
        udm_doc = json.loads(udm(record, OPTIONS).body)
        for field in fields:
            assert udm_value(udm_doc, secops_field(field)) == ecs_value(ecs_doc, field), (field, seeded.rules)
            checked += 1
    assert checked >= len(SEEDED)
