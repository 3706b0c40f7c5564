"""OCSF golden files: every ECS golden input (tests/golden/ecs/<case>.json) renders to
tests/golden/ocsf/<case>.json-expected.json.

Regenerate with GOLDEN_UPDATE=1 and review the diff by eye: the expected files are the spec.

Every OCSF event conforms to the compiled OCSF 1.8.0 schema: the class's required attributes are
present (profiles are not applied, so profile-only attributes are not required), every attribute
name exists in its class or object, values have the attribute's type, enums hold known values whose
captions match the names we emit, and type_uid = class_uid * 100 + activity_id. Checked on the
golden inputs and on arbitrary JSON-ish records.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder import jsonutil
from forwarder.normalize import get_formatter
from forwarder.normalize.ocsf import format_ocsf, to_ocsf

from . import API_ACTIONS, OPTIONS, audit_record, golden_cases, golden_records, json_like
from .ocsf_check import OCSF_1_8, OcsfSchema

OCSF_DIR = Path(__file__).resolve().parents[1] / "golden" / "ocsf"


def render(events: list[dict]) -> str:
    return json.dumps(events, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("case", golden_cases())
def test_golden(case):
    actual = render([to_ocsf(record, OPTIONS) for record in golden_records(case)])
    path = OCSF_DIR / f"{case}.json-expected.json"
    if os.environ.get("GOLDEN_UPDATE") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path.name} is missing: run with GOLDEN_UPDATE=1, then review it"
    assert json.loads(actual) == json.loads(path.read_text(encoding="utf-8"))


def test_no_orphan_expected_files():
    names = sorted(path.name[: -len(".json-expected.json")] for path in OCSF_DIR.glob("*-expected.json"))
    assert names == golden_cases()


def test_format_ocsf_serializes_to_ocsf():
    record = golden_records("user_login")[0]
    event = format_ocsf(record, OPTIONS)
    assert (event.id, event.time_us, event.is_json) == (record.event_id, record.ts_us, True)
    assert event.body == jsonutil.dumps(to_ocsf(record, OPTIONS))
    assert get_formatter("ocsf") is format_ocsf


@pytest.mark.parametrize(
    ("case", "index", "class_uid", "activity_id"),
    [
        ("user_login", 0, 3002, 1),
        ("user_update", 0, 3001, 99),
        ("user_update_roles_grant", 0, 3005, 1),
        ("user_update_roles_revoke", 0, 3005, 2),
        ("domain_create", 0, 3004, 1),
        ("domain_update_spf", 0, 3004, 3),
        ("domain_destroy", 0, 3004, 4),
    ],
)
def test_class_and_activity_follow_the_mapping(case, index, class_uid, activity_id):
    event = to_ocsf(golden_records(case)[index], OPTIONS)
    assert (event["class_uid"], event["activity_id"]) == (class_uid, activity_id)
    assert event["type_uid"] == class_uid * 100 + activity_id
    assert event["metadata"]["uid"] == golden_records(case)[index].event_id


def test_entity_carries_before_and_result_after():
    event = to_ocsf(golden_records("domain_update_dmarc_weakened")[0], OPTIONS)
    before = event["entity"]["data"]["dmarc_txt_record"]
    after = event["entity_result"]["data"]["dmarc_txt_record"]
    assert "p=reject" in before and "p=none" in after
    assert event["severity_id"] == 4 and event["unmapped"]["dmarc"]["weakened"] is True


def test_include_original_controls_raw_data():
    record = golden_records("user_login")[0]
    assert json.loads(to_ocsf(record, OPTIONS)["raw_data"]) == record.raw
    assert "raw_data" not in to_ocsf(record, dataclasses.replace(OPTIONS, include_original=False))


def _containers(value, found=None):
    """The ids of every dict and list in ``value``."""
    found = set() if found is None else found
    if isinstance(value, (dict, list)):
        found.add(id(value))
        for item in value.values() if isinstance(value, dict) else value:
            _containers(item, found)
    return found


@pytest.mark.parametrize(
    "case", ["user_update", "user_update_roles_grant", "domain_update_spf", "user_login"]
)
def test_events_share_no_container_with_the_caches_or_each_other(case):
    """The actor's and the affected user's OCSF users and the metadata are copied from caches: an
    event changed by its caller changes no other event."""
    record = golden_records(case)[0]
    first, second = to_ocsf(record, OPTIONS), to_ocsf(record, OPTIONS)
    assert not _containers(first) & _containers(second)
    expected = json.dumps(second, sort_keys=True)
    for name in ("actor", "user", "user_result", "metadata"):
        if isinstance(first.get(name), dict):
            first[name].clear()
    assert json.dumps(to_ocsf(record, OPTIONS), sort_keys=True) == expected


check_event = OcsfSchema(OCSF_1_8).check_event


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
    assert check_event(to_ocsf(audit_record(action, user, obj, changes, stream), OPTIONS)) == []
