"""The add-on's conf files parse, and its CIM mapping holds on events from the real ECS formatter."""

from __future__ import annotations

import configparser
import fnmatch
import re
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from forwarder.normalize import NormalizeOptions
from forwarder.normalize.ecs import format_ecs
from forwarder.records import parse_record
from forwarder.sim.generate import generate_org
from tests.normalize import API_ACTIONS

from .spl_eval import apply_props, evaluate, extract

CONF_FILES = ("app.conf", "inputs.conf", "props.conf", "eventtypes.conf", "tags.conf", "macros.conf")
_TERM = re.compile(r'([\w.{}]+)\s*(?:=\s*"([^"]*)"|\s+IN\s*\(([^)]*)\))')


def read_conf(path) -> configparser.ConfigParser:
    conf = configparser.ConfigParser(
        interpolation=None, delimiters=("=",), comment_prefixes=("#",), strict=True
    )
    conf.optionxform = str  # Splunk setting names are case-sensitive
    conf.read(path, encoding="utf-8")
    return conf


@pytest.fixture(scope="module")
def conf(app_dir):
    return {name: read_conf(app_dir / "default" / name) for name in CONF_FILES}


@pytest.fixture(scope="module")
def samples():
    """Every record of a generated organization, as the add-on ships it: ECS JSON text."""
    options = NormalizeOptions(ingest_time_us=0)
    per_action: Counter = Counter()
    kept = []
    for raw in generate_org(7).all_records():
        per_action[raw["filterable_action"]] += 1
        if per_action[raw["filterable_action"]] <= 25:  # every kind of record, few of the common ones
            kept.append(format_ecs(parse_record(raw, "user"), options).body.decode())
    return kept


def eventtypes_of(conf, fields: dict) -> set:
    """Eventtypes whose search (field="value" terms, with * and IN lists) matches the fields."""
    matched = set()
    for name in conf["eventtypes.conf"].sections():
        terms = _TERM.findall(conf["eventtypes.conf"][name]["search"])
        assert terms, name
        if all(
            any(
                fnmatch.fnmatchcase(str(fields.get(f, "")), p)
                for p in ([v] if not listed else re.findall(r'"([^"]*)"', listed))
            )
            for f, v, listed in terms
        ):
            matched.add(name)
    return matched


def tags_of(conf, eventtypes: set) -> set:
    tags = conf["tags.conf"]
    return (
        {tag for et in eventtypes for tag, state in tags[f"eventtype={et}"].items() if state == "enabled"}
        if eventtypes
        else set()
    )


def cim_view(conf, raw: str) -> dict:
    fields = apply_props(conf["props.conf"]["emailauth:audit"], raw)
    fields["sourcetype"] = "emailauth:audit"
    known = [e for e in eventtypes_of(conf, fields) if conf["tags.conf"].has_section(f"eventtype={e}")]
    fields["tag"] = tags_of(conf, set(known))
    return fields


def test_conf_files_parse_with_the_expected_settings(conf, app_dir):
    assert conf["app.conf"]["package"]["id"] == app_dir.name == conf["app.conf"]["id"]["name"]
    assert re.match(r"^\d+\.\d+\.\d+$", conf["app.conf"]["id"]["version"])
    stanza = conf["inputs.conf"]["emailauth_audit"]
    assert stanza["python.version"] == "python3" and "3.9" in stanza["python.required"]
    props = conf["props.conf"]["emailauth:audit"]
    assert props["KV_MODE"] == "json" and props["SHOULD_LINEMERGE"] == "false"
    assert int(props["TRUNCATE"]) >= 100_000
    for view in (app_dir / "default" / "data" / "ui" / "views").glob("*.xml"):
        root = ET.parse(view).getroot()  # UCC's pages are <view>s; dashboards are Dashboard Studio
        assert root.tag == "view" or root.get("version") == "2", view.name
    assert "client_secret" not in (app_dir / "README" / "inputs.conf.spec").read_text()


def test_timestamp_settings_read_the_event_time(conf, samples):
    props = conf["props.conf"]["emailauth:audit"]
    prefix = re.search(props["TIME_PREFIX"], samples[0])
    assert prefix and samples[0][prefix.end() : prefix.end() + 27] == extract_ts(samples[0])
    assert prefix.end() <= 40


def extract_ts(raw: str) -> str:
    import json

    return json.loads(raw)["@timestamp"]


def test_every_action_kind_is_in_the_samples(samples):
    actions = Counter(extract_fields(s)["event.action"] for s in samples)
    for action in API_ACTIONS:
        assert actions[action], action


def extract_fields(raw: str) -> dict:
    import json

    return extract(json.loads(raw))


def test_logins_fit_the_authentication_data_model(conf, samples):
    logins = [f for f in map(lambda s: cim_view(conf, s), samples) if f["event.action"] == "user.login"]
    assert logins
    for f in logins:
        assert f["tag"] == {"authentication"}
        assert f["action"] == "success" and f["status"] == "success"
        assert f["user"] == f["user.email"] and f["app"] == "EmailAuth Platform"
        assert f["src"] == "unknown" and f["dest"] and f["signature"]
        assert f["vendor_product"] == "Fortra EmailAuth Platform" and f["command"] == "user.login"
        assert "change_type" not in f and "object" not in f


def test_account_changes_fit_change_account_management(conf, samples):
    changes = [
        f for f in map(lambda s: cim_view(conf, s), samples) if f["event.action"].startswith("user.update")
    ]
    assert {f["event.action"] for f in changes} == {"user.update", "user.update_roles"}
    for f in changes:
        assert f["tag"] == {"change", "account"}
        assert f["action"] == "modified" and f["change_type"] == "AAA" and f["result"] == "success"
        assert f["object_category"] == "user"
        assert f["object"] == f["user"] == f.get("user.target.email", f.get("user.target.id"))
        assert f["src_user"] == f["user.email"]
        assert f["object_attrs"], f["event.action"]
        if f["event.action"] == "user.update_roles":
            assert "roles" in f["object_attrs"]


def test_domain_changes_fit_change_all_changes(conf, samples):
    expected = {"domain.create": "created", "domain.update": "modified", "domain.destroy": "deleted"}
    seen = set()
    for raw in samples:
        f = cim_view(conf, raw)
        if f["event.action"] not in expected:
            continue
        seen.add(f["event.action"])
        assert f["tag"] == {"change"}
        assert f["action"] == expected[f["event.action"]] and f["change_type"] == "configuration"
        assert f["object_category"] == "domain" and f["object"] == f["entity.target.name"]
        assert f["user"] == f["src_user"] == f["user.email"]
        if f["event.action"] == "domain.update":
            assert set(f["object_attrs"]) & {
                "dmarc_txt_record",
                "spf_txt_record",
                "dkim_txt_record",
                "dkim_selector",
            }
    assert seen == set(expected)


def test_every_source_field_the_mapping_reads_exists_in_the_events(conf, samples):
    props = conf["props.conf"]["emailauth:audit"]
    referenced = set()
    for key, value in props.items():
        if key.startswith("FIELDALIAS-"):
            referenced |= set(value.split()[0::3])
        elif key.startswith("EVAL-"):
            referenced |= set(re.findall(r"'([^']+)'", value))
    present = set().union(*(extract_fields(s) for s in samples))
    missing = referenced - present
    assert missing == {"source.ip"}, missing  # the API reports no client address: src falls back to "unknown"


def test_the_evaluator_rejects_what_it_does_not_model():
    with pytest.raises(SyntaxError):
        evaluate('replace(a, "x", "y")', {})
