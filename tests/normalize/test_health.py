"""The health event in every format: golden files (tests/golden/health/<case>.<format>), ECS and OCSF
schema conformity, and a CEF line a strict parser reads back.

Regenerate with GOLDEN_UPDATE=1 and review the diff by eye: the expected files are the spec."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

from forwarder.health import Origin, summary
from forwarder.normalize import formats
from forwarder.normalize.health import health_event, to_cef, to_ecs, to_ocsf, to_udm
from forwarder.report import RunReport, StreamReport
from tests.cef_parser import parse
from tests.sinks.test_elasticsearch import mapped_paths

from . import OPTIONS
from .ocsf_check import OCSF_1_8, OcsfSchema
from .test_ecs import CUSTOM_TEMPLATE, ecs_fields, leaves

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "health"
ORIGIN = Origin("lambda", "acme", "0123456789abcdef", 300, version="9.9.9")
RUN_ID = "5f0c7e2a9b1d4c3e8a7f6b5d4c3e2a10"


def report(case: str) -> RunReport:
    """A run of each kind the health event tells apart."""
    started, finished = "2026-03-01T12:00:00.000000Z", "2026-03-01T12:01:30.250000Z"
    if case == "skipped":
        return RunReport(
            started, finished, skip_reason="lease held by host-a:42:abc until 2026-03-01T12:10:00Z"
        )
    ok = StreamReport("user:alice@example.com", fetched=12, new=10, shipped=10, api_calls=3)
    ok.strategy, ok.lag_seconds = "ascending+start_date", 40.5
    behind = StreamReport("domain:example.com", fetched=200, new=200, shipped=200, api_calls=5)
    behind.strategy, behind.truncated, behind.lag_seconds = "ascending+start_date", True, 7200.0
    quiet = StreamReport("user:carol@example.com", api_calls=1, strategy="offset", lag_seconds=86400.0)
    streams = [ok, behind, quiet]
    if case == "failure":
        broken = StreamReport("user:bob@example.com", api_calls=2, lag_seconds=3600.0)
        broken.error = "api answered 503 five times (FORWARDER_MAX_ATTEMPTS)"
        streams.append(broken)
    run = RunReport(started, finished, streams=streams, not_due=["user:dave@example.com"])
    if case == "stopped":
        run.stop_reason, run.not_started = "budget", ["user:erin@example.com"]
        behind.stopped = True
    return run


CASES = ("success", "failure", "skipped", "stopped")


def health_of(case: str) -> Dict[str, Any]:
    return summary(report(case), ORIGIN, RUN_ID, stopped=False)


def rendered(case: str, event_format: str) -> str:
    event = health_event(health_of(case), event_format, OPTIONS)
    if not event.is_json:
        return event.body.decode("utf-8") + "\n"
    return json.dumps(json.loads(event.body), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("event_format", formats())
@pytest.mark.parametrize("case", CASES)
def test_golden(case, event_format):
    path = GOLDEN / f"{case}.{event_format}"
    actual = rendered(case, event_format)
    if os.environ.get("GOLDEN_UPDATE") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path.name} is missing: run with GOLDEN_UPDATE=1, then review it"
    assert actual == path.read_text(encoding="utf-8")


def test_every_format_has_a_health_event():
    for event_format in formats():
        event = health_event(health_of("success"), event_format, OPTIONS)
        assert event.id == RUN_ID and event.time_us > 0


def test_the_status_and_lag_each_case_tells():
    assert [health_of(c)["status"] for c in CASES] == ["success", "failure", "skipped", "stopped"]
    health = health_of("success")
    # the stalest watermark is a quiet stream's; only the stream cut short is behind
    assert health["lag"] == {"oldest_watermark_seconds": 86400.0, "behind_seconds": 7200.0}
    assert health["records"]["shipped"] == 210 and health["api_calls"] == 9
    assert health["streams"]["truncated"] == 1 and health["streams"]["not_due"] == 1
    assert health["strategies"] == ["ascending+start_date", "offset"]
    assert health_of("failure")["error"].startswith("user:bob@example.com: api answered 503")
    assert summary(report("success"), ORIGIN, RUN_ID, stopped=True)["status"] == "stopped"


def ecs_problems(doc: Dict[str, Any]) -> List[str]:
    """ECS 9.4 fields of the right type; every number under emailauth. mapped as a number by the
    index template (else Elasticsearch would compare the lag as text)."""
    fields, present = ecs_fields(), dict(leaves(doc))
    template = json.loads(CUSTOM_TEMPLATE.read_text(encoding="utf-8"))["template"]["mappings"]["properties"]
    mapped = mapped_paths(template)
    problems = [f"{p} is required" for p, spec in fields.items() if spec.get("required") and p not in present]
    for path, value in present.items():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if path.startswith("emailauth."):
            if number and mapped.get(path) not in ("long", "float"):
                problems.append(f"{path}: a number the template maps as {mapped.get(path)}")
            continue
        spec = fields.get(path)
        if spec is None:
            problems.append(f"{path}: not an ECS field")
            continue
        if number != (spec["type"] in ("long", "float")):
            problems.append(f"{path}: ECS type {spec['type']}, got {value!r}")
        names = [item["name"] for item in spec.get("allowed_values", [])]
        if names and value not in names:
            problems.append(f"{path}: {value!r} not allowed")
    return problems


@pytest.mark.parametrize("case", CASES)
def test_ecs_health_conforms_and_reads_as_health(case):
    doc = to_ecs(health_of(case), OPTIONS)
    assert ecs_problems(doc) == []
    assert doc["event"]["kind"] == "metric" and doc["event"]["dataset"] == "emailauth.forwarder.health"
    assert "action" not in doc["event"]  # the audit rules never read a health event


@pytest.mark.parametrize("case", CASES)
def test_ocsf_health_conforms(case):
    doc = to_ocsf(health_of(case), OPTIONS)
    # the class's attributes, not check_event: OCSF puts a source's own words in activity_name and
    # status where their ids are 99 (Other), which check_event holds to the captions
    ocsf = OcsfSchema(OCSF_1_8)
    klass = ocsf.doc["classes"]["application_lifecycle"]
    assert doc["class_uid"] == klass["uid"] and doc["type_uid"] == doc["class_uid"] * 100 + doc["activity_id"]
    assert ocsf.check_attributes(doc, klass["attributes"], "application_lifecycle") == []


@pytest.mark.parametrize("case", CASES)
def test_cef_health_parses_strictly(case):
    line = parse(to_cef(health_of(case), OPTIONS))
    assert line.signature_id == "forwarder.health" and line.extension["cs1"] == RUN_ID
    assert line.extension["outcome"] == case


def test_hostile_text_stays_one_line_in_every_format():
    run = report("failure")
    run.streams[-1].error = "boom\r\nCEF:0|forged|x|1|y|z|10|\\ = | end"
    health = summary(run, ORIGIN, RUN_ID, stopped=False)
    for event_format in formats():
        body = health_event(health, event_format, OPTIONS).body
        assert b"\n" not in body and b"\r" not in body
    assert "forged" in parse(to_cef(health, OPTIONS)).extension["cs6"]


@pytest.mark.parametrize("case", CASES)
def test_udm_health_is_an_event_google_secops_takes(case):
    from tests.receivers.udm_checks import udm_problem

    doc = to_udm(health_of(case), OPTIONS)
    assert udm_problem(doc) is None
    assert doc["additional"]["fields"]["emailauth.forwarder.status"] == case
    # every audit rule of secops/rules reads the platform's events only
    assert doc["metadata"]["product_name"] != OPTIONS.product
    rules = Path(__file__).resolve().parents[2] / "secops" / "rules"
    for rule in rules.glob("*.yaral"):
        assert f'$e.metadata.product_name = "{OPTIONS.product}"' in rule.read_text(encoding="utf-8"), (
            rule.name
        )
