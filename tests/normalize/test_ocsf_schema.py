"""Every OCSF event conforms to the compiled OCSF 1.8.0 schema: the class's required attributes are
present (profiles are not applied, so profile-only attributes are not required), every attribute
name exists in its class or object, values have the attribute's type, enums hold known values whose
captions match the names we emit, and type_uid = class_uid * 100 + activity_id. Checked on the
golden inputs and on arbitrary JSON-ish records."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder.normalize.ocsf import to_ocsf
from forwarder.records import parse_record

from . import API_ACTIONS, OPTIONS, golden_cases, golden_records, json_like

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "ocsf-1.8.0-compiled.json"
_PYTHON_TYPES = {"string_t": str, "integer_t": int, "long_t": int, "boolean_t": bool, "float_t": (int, float)}


@functools.cache
def schema() -> Dict[str, Any]:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def base_type(name: str) -> str:
    types = schema()["types"]
    while name in types and types[name].get("type") and types[name]["type"] != name:
        name = types[name]["type"]
    return name


def check_attributes(value: Dict[str, Any], attributes: Dict[str, Any], where: str) -> List[str]:
    problems = [
        f"{where}.{name} is required"
        for name, spec in attributes.items()
        if spec.get("requirement") == "required" and not spec.get("profile") and name not in value
    ]
    for name, item in value.items():
        spec = attributes.get(name)
        if spec is None:
            problems.append(f"{where}.{name} is not an attribute of {where}")
            continue
        items = item if spec.get("is_array") else [item]
        if spec.get("is_array") and not isinstance(item, list):
            problems.append(f"{where}.{name} must be an array")
            continue
        for element in items:
            problems += check_value(element, spec, f"{where}.{name}")
    return problems


def check_value(value: Any, spec: Dict[str, Any], where: str) -> List[str]:
    kind = spec["type"]
    objects = schema()["objects"]
    if kind == "object" or base_type(kind) == "json_t":
        return []  # free-form: unmapped, entity data
    if kind in objects:
        if not isinstance(value, dict):
            return [f"{where} must be an object"]
        problems = check_attributes(value, objects[kind]["attributes"], where)
        group = (objects[kind].get("constraints") or {}).get("at_least_one")
        if group and not any(name in value for name in group):
            problems.append(f"{where} needs one of {group}")
        return problems
    expected = _PYTHON_TYPES.get(base_type(kind))
    if expected is None:
        return [f"{where}: unexpected type {kind}"]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        return [f"{where}: {kind} needs {expected}, got {value!r}"]
    enum = spec.get("enum")
    if enum and str(value) not in enum:
        return [f"{where}: {value!r} is not one of {sorted(enum)}"]
    return []


def check_event(event: Dict[str, Any]) -> List[str]:
    classes = {spec["uid"]: spec for spec in schema()["classes"].values()}
    spec = classes.get(event.get("class_uid"))
    if spec is None:
        return [f"unknown class_uid {event.get('class_uid')}"]
    attributes = spec["attributes"]
    problems = check_attributes(event, attributes, spec["name"])
    if event["type_uid"] != event["class_uid"] * 100 + event["activity_id"]:
        problems.append("type_uid is not class_uid * 100 + activity_id")
    captions = {
        "class_name": spec["caption"],
        "activity_name": attributes["activity_id"]["enum"][str(event["activity_id"])]["caption"],
        "type_name": attributes["type_uid"]["enum"][str(event["type_uid"])]["caption"],
        "category_name": attributes["category_uid"]["enum"][str(event["category_uid"])]["caption"],
        "severity": attributes["severity_id"]["enum"][str(event["severity_id"])]["caption"],
        "status": attributes["status_id"]["enum"][str(event["status_id"])]["caption"],
    }
    problems += [
        f"{key} {event.get(key)!r} is not {caption!r}"
        for key, caption in captions.items()
        if event.get(key) != caption
    ]
    if event["metadata"]["version"] != schema()["version"]:
        problems.append("metadata.version is not the schema's")
    return problems


@pytest.mark.parametrize("case", golden_cases())
def test_golden_events_conform(case):
    for record in golden_records(case):
        assert check_event(to_ocsf(record, OPTIONS)) == []


def test_the_check_catches_problems():
    event = to_ocsf(golden_records("user_login")[0], OPTIONS)
    broken = dict(event, type_uid=300299, bogus=1, user={"email_addr": "x@example.com"})
    del broken["time"]
    problems = check_event(broken)
    assert any("time is required" in p for p in problems)
    assert any("bogus" in p for p in problems)
    assert any("type_uid is not" in p for p in problems)
    assert any("needs one of" in p for p in problems)


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20))
VALUES = json_like(SCALARS, max_size=3, max_leaves=8)
ACTIONS = st.sampled_from(
    [*API_ACTIONS, "user.create", "user.delete", "dkim_record_source.update", "report.view"]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    action=ACTIONS,
    user=VALUES,
    obj=VALUES,
    changes=st.dictionaries(st.text(max_size=10), VALUES, max_size=4) | VALUES,
    roles=st.tuples(
        st.lists(st.sampled_from(["A", "UserAdminRole", "B"])), st.lists(st.sampled_from(["A", "C"]))
    ),
    stream=st.sampled_from(["user", "domain"]),
)
def test_arbitrary_records_conform(action, user, obj, changes, roles, stream):
    if action == "user.update_roles" and isinstance(changes, dict):
        changes["roles"] = list(roles)
    raw = {
        "filterable_action": action,
        "action": action,
        "user": user,
        "object": obj,
        "changes": changes,
        "created_at": "2026-01-02T03:04:05Z",
    }
    assert check_event(to_ocsf(parse_record(raw, stream), OPTIONS)) == []
