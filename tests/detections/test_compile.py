"""The rule files, and what tools/compile_detections.py makes of them for Splunk and Elastic."""

from __future__ import annotations

import configparser
import json
import shutil

import pytest
import yaml
from compile_detections import (
    ELASTIC_OUT,
    RULES,
    compile_rules,
    elastic_backend,
    elastic_rules,
    main,
    savedsearches,
    splunk_backend,
)

RULE_FILES = sorted(RULES.glob("*.yml"))


def documents(path):
    return list(yaml.safe_load_all(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.stem)
def test_each_file_holds_one_complete_rule(path):
    (rule,) = documents(path)
    assert rule["level"] in ("informational", "low", "medium", "high", "critical")
    assert rule["tags"] and rule["falsepositives"] and rule["description"]
    if "correlation" not in rule:
        assert rule["logsource"] == {"product": "emailauth", "service": "audit"}


def test_ids_and_titles_are_unique():
    rules = [documents(path)[0] for path in RULE_FILES]
    assert len({r["id"] for r in rules}) == len({r["title"] for r in rules}) == len(rules)


def test_the_committed_elastic_rules_are_up_to_date():
    assert ELASTIC_OUT.read_text(encoding="utf-8") == elastic_rules(compile_rules(elastic_backend)), (
        "run: .venv/bin/python tools/compile_detections.py --elastic"
    )


def test_elastic_rules_are_kibana_imports_disabled_with_attack_mappings():
    rows = [json.loads(line) for line in ELASTIC_OUT.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(RULE_FILES) - 2  # the correlations' building blocks have no rule of their own
    for row in rows:
        assert row["type"] == row["language"] == "esql" and row["enabled"] is False
        assert row["query"].startswith("from logs-emailauth.audit-*")
        assert row["severity"] in ("low", "medium", "high", "critical") and 0 < row["risk_score"] <= 100
    by_name = {row["name"]: row for row in rows}
    threat = by_name["EmailAuth admin role granted"]["threat"]
    assert [t["tactic"]["id"] for t in threat] == ["TA0003", "TA0004"]
    assert threat[0]["technique"][0]["subtechnique"][0]["id"] == "T1098.003"
    burst = by_name["EmailAuth role changes burst by one actor"]
    assert "| mv_expand sigma_hop" in burst["query"] and "date_trunc" not in burst["query"]  # hopping windows
    assert "by sigma_window, user.id" in burst["query"] and burst["from"] == "now-51m"


def test_splunk_saved_searches_are_disabled_scheduled_alerts_on_the_add_on_fields():
    conf = configparser.RawConfigParser(delimiters=("=",), strict=True)
    conf.optionxform = str  # keys are case-sensitive in Splunk
    compiled = compile_rules(splunk_backend)
    conf.read_string(savedsearches(compiled))
    assert sorted(conf.sections()) == sorted(item.rule.title for item in compiled)
    for title in conf.sections():
        stanza = conf[title]
        assert stanza["disabled"] == "1" and stanza["enableSched"] == "1" and stanza["cron_schedule"]
        assert stanza["search"].startswith('`emailauth_index` sourcetype="emailauth:audit" ')
        assert "event.action" not in stanza["search"]  # read through the add-on's CIM alias
    burst = conf["EmailAuth role changes burst by one actor"]
    assert 'vendor_action="user.update_roles"' in burst["search"] and "| bin " not in burst["search"]
    assert "| streamstats time_window=10m count as event_count" in burst["search"]  # a sliding window
    assert burst["dispatch.index_earliest"] == "-60m@m"  # the run's 15 minutes, the timespan, the lag


STRAY_LOGSOURCE = "logsource:\n    product: windows\ndetection:\n    sel:\n        EventID: 1\n"
# a field detections/pipelines/secops.yml does not map: the UDM events would not hold it
STRAY_FIELD = (
    "logsource:\n    product: emailauth\n    service: audit\ndetection:\n    sel:\n"
    "        emailauth.audit.unmapped: x\n"
)


@pytest.mark.parametrize(("flag", "stray"), [("--splunk", STRAY_LOGSOURCE), ("--secops", STRAY_FIELD)])
def test_a_rule_that_does_not_compile_fails_the_build(tmp_path, monkeypatch, capsys, flag, stray):
    import compile_detections

    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules)
    (rules / "stray.yml").write_text(
        "title: Stray\nid: 6f1b0f5e-0c4e-4a53-9a0e-3b1c55a2c001\nstatus: test\nlevel: low\n"
        + stray
        + "    condition: sel\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(compile_detections, "RULES", rules)
    out = tmp_path / "out"
    assert main([flag, str(out)]) == 1
    assert not out.exists()
    assert "stray.yml" in capsys.readouterr().err


def rule_fields(rule: dict) -> dict[str, set]:
    """Every field a rule file reads, with the values it compares it to (group-by fields: no values)."""
    fields: dict[str, set] = {}
    for field in rule.get("correlation", {}).get("group-by", []):
        fields.setdefault(field, set())
    for name, item in rule.get("detection", {}).items():
        if name == "condition":
            continue
        for key, value in item.items():
            values = value if isinstance(value, list) else [value]
            fields.setdefault(key.split("|")[0], set()).update(type(v).__name__ for v in values)
    return fields


def test_every_field_a_rule_reads_is_mapped_in_the_index_templates_with_its_type():
    """ES|QL compares booleans only on boolean fields: a rule field the templates map as keyword (or
    not at all) would compile and never match."""
    from tests.sinks.test_elasticsearch import TEMPLATES, mapped_paths

    mapped: dict[str, str] = {}
    for name in ("component_template_ecs.json", "component_template_emailauth.json"):
        template = json.loads((TEMPLATES / name).read_text(encoding="utf-8"))
        mapped.update(mapped_paths(template["template"]["mappings"]["properties"]))
    wrong = {}
    for path in RULE_FILES:
        for field, kinds in rule_fields(documents(path)[0]).items():
            want = "boolean" if kinds == {"bool"} else "keyword"
            if mapped.get(field) != want:
                wrong[f"{path.stem}: {field}"] = (mapped.get(field), want)
    assert wrong == {}
