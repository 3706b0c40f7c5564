"""The packaged modular input, run as splunkd runs it: scheme, validation and streaming runs."""

from __future__ import annotations

import ast
import json
import os
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from forwarder.simdata import generate_org
from forwarder.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import canonical_id

from .conftest import APP, PY39, PYTHONS, input_xml, run_script, validation_xml
from .fake_splunkd import SESSION_KEY, FakeSplunkd

FIELDS = {
    "api_url",
    "client_id",
    "object_types",
    "users",
    "domains",
    "filters",
    "initial_lookback",
    "log_level",
}


def good_params(api_url: str) -> dict:
    return {
        "api_url": api_url,
        "client_id": DEMO_CLIENT_ID,
        "object_types": "user",
        "initial_lookback": "800d",
    }


@pytest.fixture
def splunkd():
    with FakeSplunkd(APP) as fake:
        fake.passwords[(APP, DEMO_CLIENT_ID)] = DEMO_CLIENT_SECRET
        yield fake


def streamed(stdout: str) -> list:
    """Parse splunkd's view of the output: one <stream> of <event> elements."""
    root = ET.fromstring(stdout)
    assert root.tag == "stream"
    return [{child.tag: child.text for child in event} | {"stanza": event.get("stanza")} for event in root]


@pytest.mark.parametrize("python", PYTHONS)
def test_scheme_names_every_argument(app_dir, python):
    done = run_script(app_dir, python, ["--scheme"])
    assert done.returncode == 0, done.stderr
    root = ET.fromstring(done.stdout)
    assert root.findtext("use_external_validation") == "true"
    assert root.findtext("use_single_instance") == "false"
    args = {arg.get("name"): arg for arg in root.iter("arg")}
    assert set(args) == FIELDS
    assert args["api_url"].findtext("required_on_create") == "true"
    assert args["client_id"].findtext("required_on_create") == "true"
    assert all(arg.findtext("description") for arg in args.values())


def test_validation_accepts_good_values(app_dir, splunkd, tmp_path):
    xml = validation_xml(splunkd.url, SESSION_KEY, tmp_path, "prod", good_params("https://api.example.com"))
    done = run_script(app_dir, PY39, ["--validate-arguments"], xml)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"api_url": "ftp://api.example.com"}, "api_url:"),
        ({"object_types": "user,mailbox"}, "object_types: choose from user, domain"),
        ({"users": "not-an-email"}, "users: 'not-an-email' is not an email address"),
        ({"initial_lookback": "fortnight"}, "initial_lookback:"),
        ({"client_id": "someone-else"}, "no client secret is stored for client id 'someone-else'"),
    ],
)
def test_validation_rejects_bad_values_with_a_clear_message(app_dir, splunkd, tmp_path, change, message):
    params = {**good_params("https://api.example.com"), **change}
    done = run_script(
        app_dir,
        PY39,
        ["--validate-arguments"],
        validation_xml(splunkd.url, SESSION_KEY, tmp_path, "prod", params),
    )
    assert done.returncode == 1
    text = ET.fromstring(done.stdout).findtext("message")
    assert message in text
    assert "FORWARDER_" not in text  # problems name the input's fields


@pytest.mark.parametrize("python", PYTHONS)
def test_runs_stream_ecs_events_then_only_new_ones(app_dir, splunkd, tmp_path, python):
    org = generate_org(5)
    home = tmp_path / "splunk"
    with Simulator(org) as sim:
        xml = input_xml(
            splunkd.url,
            SESSION_KEY,
            tmp_path / "modinputs",
            "prod",
            {**good_params(sim.base_url), "index": "audit"},
        )
        first = run_script(app_dir, python, [], xml, splunk_home=home)
        assert first.returncode == 0, first.stderr
        events = streamed(first.stdout)
        audit = [e for e in events if e["sourcetype"] == "emailauth:audit"]
        expected = sorted(canonical_id(r) for r in org.all_records())
        ecs = [json.loads(e["data"]) for e in audit]
        assert sorted(doc["event"]["id"] for doc in ecs) == expected
        for event, doc in zip(audit, ecs):
            assert event["stanza"] == "emailauth_audit://prod" and event["index"] == "audit"
            assert doc["ecs"]["version"] == "9.4.0"
            # time is the event's @timestamp, to the millisecond
            assert event["time"].split(".")[1] == doc["@timestamp"][20:23]
        health = [json.loads(e["data"]) for e in events if e["sourcetype"] == "emailauth:audit:health"]
        assert len(health) == 1 and health[0]["ok"] and health[0]["totals"]["shipped"] == len(expected)

        added = org.add_activity(7, now_us())
        second = run_script(app_dir, python, [], xml, splunk_home=home)
        assert second.returncode == 0, second.stderr
        again = [
            json.loads(e["data"]) for e in streamed(second.stdout) if e["sourcetype"] == "emailauth:audit"
        ]
        assert sorted(doc["event"]["id"] for doc in again) == sorted(canonical_id(r) for r in added)

    log_text = (home / "var" / "log" / "splunk" / "ta_fortra_emailauth.log").read_text()
    assert '"input": "prod"' in log_text and "run finished" in log_text
    for text in (log_text, first.stdout, first.stderr, second.stderr):
        assert DEMO_CLIENT_SECRET not in text and SESSION_KEY not in text


def test_a_recreated_input_does_not_reuse_the_old_state(app_dir, splunkd, tmp_path):
    org = generate_org(5)
    checkpoint = tmp_path / "modinputs"
    with Simulator(org) as sim:
        params = good_params(sim.base_url)
        xml = input_xml(splunkd.url, SESSION_KEY, checkpoint, "prod", params)
        assert run_script(app_dir, PY39, [], xml).returncode == 0
        splunkd.inputs.add("prod")  # an edit of the existing input keeps its state
        edit = validation_xml(splunkd.url, SESSION_KEY, checkpoint, "prod", params)
        assert run_script(app_dir, PY39, ["--validate-arguments"], edit).returncode == 0
        assert not [
            e
            for e in streamed_or_empty(run_script(app_dir, PY39, [], xml).stdout)
            if e["sourcetype"] == "emailauth:audit"
        ]

        splunkd.inputs.discard("prod")  # deleted; a new input with the same name is validated on create
        assert run_script(app_dir, PY39, ["--validate-arguments"], edit).returncode == 0
        fresh = run_script(app_dir, PY39, [], xml)
        audit = [e for e in streamed(fresh.stdout) if e["sourcetype"] == "emailauth:audit"]
        assert len(audit) == len(org.all_records())
    assert [p.name for p in checkpoint.iterdir() if ".retired-" in p.name]


def test_pointing_an_input_at_another_tenant_starts_afresh(app_dir, splunkd, tmp_path):
    org = generate_org(5)
    checkpoint = tmp_path / "modinputs"
    with Simulator(org) as sim, Simulator(org, client_id="other", client_secret="other-secret-1") as other:
        splunkd.passwords[(APP, "other")] = "other-secret-1"
        assert (
            run_script(
                app_dir,
                PY39,
                [],
                input_xml(splunkd.url, SESSION_KEY, checkpoint, "prod", good_params(sim.base_url)),
            ).returncode
            == 0
        )
        moved = {**good_params(other.base_url), "client_id": "other"}
        done = run_script(app_dir, PY39, [], input_xml(splunkd.url, SESSION_KEY, checkpoint, "prod", moved))
        audit = [e for e in streamed(done.stdout) if e["sourcetype"] == "emailauth:audit"]
        assert len(audit) == len(org.all_records())


def test_a_missing_secret_is_reported_to_splunkd_and_streams_nothing(app_dir, splunkd, tmp_path):
    splunkd.passwords.clear()
    xml = input_xml(splunkd.url, SESSION_KEY, tmp_path, "prod", good_params("https://api.example.com"))
    done = run_script(app_dir, PY39, [], xml)
    assert "<event" not in done.stdout
    assert "ERROR" in done.stderr and "no client secret stored for client id 'demo-client'" in done.stderr


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


def streamed_or_empty(stdout: str) -> list:
    return streamed(stdout) if stdout.strip() else []


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
