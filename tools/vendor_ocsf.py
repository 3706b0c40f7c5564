"""Cut an OCSF schema export (schema.ocsf.io's ``/<version>/export/schema`` document) down to the
classes named and every object they reach, in the compiled form the tests read
(``tests/schemas/ocsf-1.8.0-compiled.json``): an attribute's ``type`` is its object's name
(``object`` for free-form data) or its scalar type, with ``is_array``, ``requirement``, ``profile``
and ``enum`` captions; descriptions are left out.

The Security Lake sink writes OCSF 1.3 (the newest version Security Lake's custom sources take), so
its tests check rows against ``tests/schemas/ocsf-1.3.0-iam.json``, made with:

    pip download --no-deps ocsf-json-schema==1.2.0   # its wheel holds the official 1.3.0 export
    python tools/vendor_ocsf.py <unpacked wheel>/ocsf_json_schema/ocsf/1.3.0.json \\
        tests/schemas/ocsf-1.3.0-iam.json 3001 3002 3004 3005
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Set

KEPT = ("is_array", "requirement", "profile")


def attribute(spec: Dict[str, Any]) -> Dict[str, Any]:
    """One attribute in compiled form."""
    kind = spec["object_type"] if spec.get("type") == "object_t" else spec["type"]
    out: Dict[str, Any] = {"type": kind, "caption": spec.get("caption")}
    out.update({key: spec[key] for key in KEPT if spec.get(key) is not None})
    if spec.get("enum"):
        out["enum"] = {value: {"caption": item.get("caption")} for value, item in spec["enum"].items()}
    return out


def attributes(specs: Dict[str, Any]) -> Dict[str, Any]:
    return {name: attribute(spec) for name, spec in sorted(specs.items())}


def reached(export: Dict[str, Any], roots: List[Dict[str, Any]]) -> Set[str]:
    """The names of every object the ``roots`` (classes or objects) reach through their attributes."""
    objects = export["objects"]
    found: Set[str] = set()
    todo = list(roots)
    while todo:
        for spec in todo.pop()["attributes"].values():
            name = spec.get("object_type")
            if spec.get("type") == "object_t" and name in objects and name not in found:
                found.add(name)
                todo.append(objects[name])
    return found


def cut(export: Dict[str, Any], class_uids: List[int]) -> Dict[str, Any]:
    """The compiled document of ``class_uids`` and the objects they reach."""
    classes = {name: spec for name, spec in export["classes"].items() if spec["uid"] in class_uids}
    missing = set(class_uids) - {spec["uid"] for spec in classes.values()}
    if missing:
        raise SystemExit(f"no class {sorted(missing)} in OCSF {export['version']}")
    names = reached(export, list(classes.values()))
    return {
        "version": export["version"],
        "source": f"schema.ocsf.io/{export['version']}/export/schema, cut by tools/vendor_ocsf.py",
        "classes": {
            name: {
                "uid": spec["uid"],
                "name": name,
                "caption": spec["caption"],
                "attributes": attributes(spec["attributes"]),
            }
            for name, spec in sorted(classes.items())
        },
        "objects": {
            name: {
                "name": name,
                "caption": export["objects"][name].get("caption"),
                "attributes": attributes(export["objects"][name]["attributes"]),
                **(
                    {"constraints": export["objects"][name]["constraints"]}
                    if export["objects"][name].get("constraints")
                    else {}
                ),
            }
            for name in sorted(names)
        },
        "types": {
            name: {"type": spec["type"]} if spec.get("type") else {}
            for name, spec in sorted(export["types"].items())
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("export", type=Path, help="an OCSF schema export (JSON)")
    parser.add_argument("out", type=Path, help="the compiled cut to write")
    parser.add_argument("class_uids", type=int, nargs="+", help="the classes to keep")
    args = parser.parse_args()
    export = json.loads(args.export.read_text(encoding="utf-8"))
    text = json.dumps(cut(export, args.class_uids), indent=1, sort_keys=True, ensure_ascii=False)
    args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
