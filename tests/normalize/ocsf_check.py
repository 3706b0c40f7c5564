"""An OCSF event checked against a compiled OCSF schema (``tests/schemas/ocsf-*.json``): the class's
required attributes are present (profiles are not applied, so profile-only attributes are not
required), every attribute name exists in its class or object, values have the attribute's type,
enums hold known values whose captions match the names emitted, type_uid = class_uid * 100 +
activity_id, and metadata.version is the schema's. Shared by the OCSF 1.8 normalizer's tests and the
Security Lake sink's (OCSF 1.3)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Dict, List

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
OCSF_1_8 = "ocsf-1.8.0-compiled.json"
OCSF_1_3 = "ocsf-1.3.0-iam.json"  # tools/vendor_ocsf.py: the classes the forwarder emits, OCSF 1.3.0
_PYTHON_TYPES = {"string_t": str, "integer_t": int, "long_t": int, "boolean_t": bool, "float_t": (int, float)}


@functools.cache
def load(name: str) -> Dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


class OcsfSchema:
    def __init__(self, name: str) -> None:
        self.doc = load(name)

    def base_type(self, name: str) -> str:
        types = self.doc["types"]
        while name in types and types[name].get("type") and types[name]["type"] != name:
            name = types[name]["type"]
        return name

    def check_attributes(self, value: Dict[str, Any], attributes: Dict[str, Any], where: str) -> List[str]:
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
                problems += self.check_value(element, spec, f"{where}.{name}")
        return problems

    def check_value(self, value: Any, spec: Dict[str, Any], where: str) -> List[str]:
        kind = spec["type"]
        objects = self.doc["objects"]
        if kind == "object" or self.base_type(kind) == "json_t":
            return []  # free-form: unmapped, entity data
        if kind in objects:
            if not isinstance(value, dict):
                return [f"{where} must be an object"]
            problems = self.check_attributes(value, objects[kind]["attributes"], where)
            group = (objects[kind].get("constraints") or {}).get("at_least_one")
            if group and not any(name in value for name in group):
                problems.append(f"{where} needs one of {group}")
            return problems
        expected = _PYTHON_TYPES.get(self.base_type(kind))
        if expected is None:
            return [f"{where}: unexpected type {kind}"]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            return [f"{where}: {kind} needs {expected}, got {value!r}"]
        enum = spec.get("enum")
        if enum and str(value) not in enum:
            return [f"{where}: {value!r} is not one of {sorted(enum)}"]
        return []

    def check_event(self, event: Dict[str, Any]) -> List[str]:
        classes = {spec["uid"]: spec for spec in self.doc["classes"].values()}
        spec = classes.get(event.get("class_uid"))
        if spec is None:
            return [f"unknown class_uid {event.get('class_uid')}"]
        attributes = spec["attributes"]
        problems = self.check_attributes(event, attributes, spec["name"])
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
        if event["metadata"]["version"] != self.doc["version"]:
            problems.append("metadata.version is not the schema's")
        return problems
