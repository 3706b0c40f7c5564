"""The built package: what UCC generated, what the build vendored, and that a build is reproducible."""

from __future__ import annotations

import ast
import configparser
import hashlib
import json
import os
import re
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

from build_splunk_app import imports_aws
from runtime_modules import ROOT, SPLUNK_ENTRIES, closure, files

from .conftest import APP, build_package
from .test_cim import read_conf


def conf(app_dir: Path, name: str) -> configparser.ConfigParser:
    return read_conf(app_dir / "default" / name)


def test_ucc_generated_the_configuration_ui_rest_handlers_and_input(app_dir):
    views = app_dir / "default" / "data" / "ui" / "views"
    assert {"configuration.xml", "inputs.xml", "ta_fortra_emailauth_monitoring.xml"} <= {
        p.name for p in views.iterdir()
    }
    config = json.loads((app_dir / "appserver" / "static" / "js" / "build" / "globalConfig.json").read_text())
    tabs = config["pages"]["configuration"]["tabs"]
    assert [t["name"] for t in tabs] == ["account", "proxy", "logging"]
    account = {e["field"]: e for e in tabs[0]["entity"]}
    assert account["client_secret"]["encrypted"] is True
    assert {c["value"] for c in account["api_url"]["options"]["autoCompleteFields"]} == {
        "https://api.agari.com",
        "https://api.agari-eu.com",
    }
    restmap = conf(app_dir, "restmap.conf")
    assert (
        restmap["admin_external:ta_fortra_emailauth_account"]["handlerfile"]
        == "ta_fortra_emailauth_rh_account.py"
    )
    for handler in ("ta_fortra_emailauth_rh_account.py", "ta_fortra_emailauth_rh_emailauth_audit.py"):
        assert "from ta_fortra_emailauth_hooks import" in (app_dir / "bin" / handler).read_text()
    assert "emailauth_audit_helper" in (app_dir / "bin" / "emailauth_audit.py").read_text()
    inputs = conf(app_dir, "inputs.conf")["emailauth_audit"]
    assert inputs["python.version"] == "python3" and "3.9" in inputs["python.required"]


def test_collections_conf_declares_every_field_the_kv_store_writes(app_dir):
    stanza = conf(app_dir, "collections.conf")["ta_fortra_emailauth_checkpoints"]
    fields = {key[len("field.") :] for key in stanza if key.startswith("field.")}
    assert fields == {"scope", "slot", "seq", "doc", "deleted", "written"}
    assert json.loads(stanza["accelerated_fields.scope_slot_seq"]) == {"scope": 1, "slot": 1, "seq": -1}


def test_the_monitoring_dashboard_is_dashboard_studio_and_its_panels_have_searches(app_dir):
    view = (app_dir / "default" / "data" / "ui" / "views" / "ta_fortra_emailauth_monitoring.xml").read_text()
    root = ET.fromstring(view)
    assert root.get("version") == "2"
    definition = json.loads(root.findtext("definition"))
    queries = {k: v["options"]["query"] for k, v in definition["dataSources"].items()}
    assert "event.action" in queries["ds_actions"] and "user.update_roles" in queries["ds_roles"]
    assert "dmarc.weakened=true" in queries["ds_dmarc"]
    assert all("index=_internal" in queries[k] for k in ("ds_runs", "ds_failed", "ds_lag"))
    used = {v["dataSources"]["primary"] for v in definition["visualizations"].values() if "dataSources" in v}
    assert used == set(queries)
    placed = {item["item"] for item in definition["layout"]["structure"]}
    assert placed == set(definition["visualizations"])
    assert "datamodel" in json.dumps(definition) and "Authentication" in json.dumps(definition)


def test_the_build_is_reproducible_and_runs_the_detection_compiler(package, tmp_path):
    stub = tmp_path / "compile_detections.py"
    stub.write_text(
        "import sys\nassert sys.argv[1] == '--splunk'\n"
        "open(sys.argv[2], 'w').write('[EmailAuth - stub rule]\\nsearch = sourcetype=emailauth:audit\\n')\n"
    )
    again = build_package(tmp_path / "again")  # the real detections, as the fixture's build
    assert hashlib.sha256(again.read_bytes()).hexdigest() == hashlib.sha256(package.read_bytes()).hexdigest()
    with tarfile.open(package) as tar:
        member = tar.extractfile(f"{APP}/default/savedsearches.conf")
        assert member is not None and b"disabled = 1" in member.read()
    with_rules = build_package(tmp_path / "rules", detections=stub)
    with tarfile.open(with_rules) as tar:
        member = tar.extractfile(f"{APP}/default/savedsearches.conf")
        assert member is not None and b"[EmailAuth - stub rule]" in member.read()


def test_lib_holds_the_ucc_libraries_and_the_add_on_handlers(app_dir):
    lib = app_dir / "lib"
    for module in ("solnlib", "splunktaucclib", "splunklib", "requests"):
        assert (lib / module / "__init__.py").exists(), module
    for name in ("splunk_input.py", "splunk_settings.py", "splunk_hooks.py"):
        assert (lib / "handlers" / name).exists()
    assert (lib / "forwarder" / "state" / "kvstore.py").exists()
    assert os.access(app_dir / "bin" / "emailauth_audit.py", os.X_OK)


def test_lib_holds_only_what_the_add_on_imports(app_dir):
    """The closure of the add-on's handlers (tools/runtime_modules.py), less what needs boto3; not the
    simulator, the CLI, the console, the fan-out or the Lambda adapters, nor the libraries' tests."""
    lib = app_dir / "lib"
    shipped = {p.relative_to(lib) for top in ("forwarder", "handlers") for p in (lib / top).rglob("*.py")}
    assert shipped == {p for p in files(closure(SPLUNK_ENTRIES)) if not imports_aws(ROOT / p)}
    for absent in (
        "forwarder/sim",
        "forwarder/cli",
        "forwarder/console",
        "forwarder/fanout",
        "certifi/tests",
    ):
        assert not (lib / absent).exists(), absent
    assert not list((lib / "handlers").glob("aws_*.py"))


def unguarded_imports(path: Path, banned: set) -> list:
    """Imports of ``banned`` modules, except inside ``try: ... except ImportError`` (an optional speed-up)."""
    found = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.Try):
            catches = any(
                h.type is None
                or "ImportError" in ast.dump(h.type)
                or "ModuleNotFoundError" in ast.dump(h.type)
                for h in node.handlers
            )
            for child in node.body:
                visit(child, guarded or catches)
            for child in node.handlers + node.orelse + node.finalbody:
                visit(child, guarded)
            return
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if not guarded:
            found.extend(n for n in names if n.split(".")[0] in banned)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(ast.parse(path.read_text()), False)
    return found


def test_package_ships_no_compiled_code_and_no_aws_or_orjson_imports(package, app_dir):
    with tarfile.open(package) as tar:
        names = tar.getnames()
    assert all(name.split("/")[0] == APP for name in names)
    assert not [n for n in names if n.endswith((".so", ".pyd", ".pyc", ".dll", ".exe")) or "__pycache__" in n]
    lib = app_dir / "lib"
    for top in ("forwarder", "handlers"):
        for path in (lib / top).rglob("*.py"):
            assert not unguarded_imports(path, {"boto3", "botocore", "orjson"}), path
    for dist in (
        "requests",
        "urllib3",
        "idna",
        "certifi",
        "charset_normalizer",
        "splunklib",
        "pythonjsonlogger",
    ):
        assert (lib / dist / "__init__.py").exists(), dist
    assert os.access(app_dir / "bin" / "emailauth_audit.py", os.X_OK)


def test_the_forwarder_health_dashboard_reads_the_health_events_fields_and_is_in_the_menu(app_dir):
    from tests.splunk.spl_eval import extract

    view = app_dir / "default" / "data" / "ui" / "views" / "ta_fortra_emailauth_forwarder_health.xml"
    root = ET.fromstring(view.read_text())
    assert root.get("version") == "2"
    definition = json.loads(root.findtext("definition"))
    queries = {k: v["options"]["query"] for k, v in definition["dataSources"].items()}
    # the fields a health event carries, as KV_MODE = json names them
    golden = ROOT / "tests" / "golden" / "health"
    fields = {name for case in golden.glob("*.ecs") for name in extract(json.loads(case.read_text()))}
    for name, query in queries.items():
        assert query.startswith('`emailauth_index` sourcetype="emailauth:audit:health" '), name
        read = set(re.findall(r"(?:emailauth\.forwarder|service)\.[\w.]+\w", query))
        assert read and read <= fields, (name, read - fields)
    assert {"state", "behind_seconds", "failed_runs"} <= set(queries["ds_forwarders"].split())
    used = {v["dataSources"]["primary"] for v in definition["visualizations"].values() if "dataSources" in v}
    assert used == set(queries)
    assert {item["item"] for item in definition["layout"]["structure"]} == set(definition["visualizations"])
    nav = ET.parse(app_dir / "default" / "data" / "ui" / "nav" / "default.xml").getroot()
    assert "ta_fortra_emailauth_forwarder_health" in {v.get("name") for v in nav.iter("view")}
