"""tools/vendor_ocsf.py: an OCSF export cut to some classes and what they reach, in the compiled form
the OCSF checks read; and the vendored OCSF 1.3.0 cut is whole (every object it names is in it)."""

from __future__ import annotations

import json
from pathlib import Path

import vendor_ocsf

VENDORED = Path(__file__).resolve().parents[1] / "schemas" / "ocsf-1.3.0-iam.json"

EXPORT = {
    "version": "9.9.9",
    "classes": {
        "kept": {
            "uid": 3001,
            "caption": "Kept",
            "description": "dropped",
            "attributes": {
                "user": {
                    "type": "object_t",
                    "object_type": "user",
                    "requirement": "required",
                    "caption": "U",
                },
                "tags": {"type": "string_t", "is_array": True, "caption": "T", "description": "dropped"},
                "unmapped": {"type": "object_t", "object_type": "object", "caption": "X"},
                "status_id": {"type": "integer_t", "enum": {"1": {"caption": "Success", "description": "d"}}},
            },
        },
        "other": {
            "uid": 4001,
            "caption": "Other",
            "attributes": {"host": {"type": "object_t", "object_type": "device"}},
        },
    },
    "objects": {
        "user": {
            "caption": "User",
            "attributes": {"account": {"type": "object_t", "object_type": "account"}},
        },
        "account": {"caption": "Account", "attributes": {"uid": {"type": "string_t"}}},
        "device": {"caption": "Device", "attributes": {}},
        "object": {"caption": "Object", "attributes": {}},
    },
    "types": {"string_t": {"caption": "String"}, "username_t": {"type": "string_t"}},
}


def test_a_cut_keeps_the_classes_named_and_the_objects_they_reach():
    cut = vendor_ocsf.cut(EXPORT, [3001])

    assert list(cut["classes"]) == ["kept"]
    assert sorted(cut["objects"]) == ["account", "object", "user"]
    attributes = cut["classes"]["kept"]["attributes"]
    assert attributes["user"] == {"type": "user", "caption": "U", "requirement": "required"}
    assert attributes["tags"] == {"type": "string_t", "caption": "T", "is_array": True}
    assert attributes["status_id"]["enum"] == {"1": {"caption": "Success"}}
    assert cut["types"] == {"string_t": {}, "username_t": {"type": "string_t"}}


def test_a_class_not_in_the_export_is_refused():
    try:
        vendor_ocsf.cut(EXPORT, [3001, 5])
    except SystemExit as exc:
        assert "no class [5] in OCSF 9.9.9" in str(exc)
    else:
        raise AssertionError("a missing class was not refused")


def test_the_vendored_ocsf_1_3_cut_is_whole():
    doc = json.loads(VENDORED.read_text(encoding="utf-8"))
    assert doc["version"] == "1.3.0"
    assert sorted(spec["uid"] for spec in doc["classes"].values()) == [3001, 3002, 3004, 3005]
    named = {
        spec["type"]
        for holder in [*doc["classes"].values(), *doc["objects"].values()]
        for spec in holder["attributes"].values()
    }
    assert {kind for kind in named if not kind.endswith("_t")} <= set(doc["objects"])
    assert {kind for kind in named if kind.endswith("_t")} <= set(doc["types"])
