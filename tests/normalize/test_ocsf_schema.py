"""Every OCSF event conforms to the compiled OCSF 1.8.0 schema: the class's required attributes are
present (profiles are not applied, so profile-only attributes are not required), every attribute
name exists in its class or object, values have the attribute's type, enums hold known values whose
captions match the names we emit, and type_uid = class_uid * 100 + activity_id. Checked on the
golden inputs and on arbitrary JSON-ish records."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder.normalize.ocsf import to_ocsf

from . import API_ACTIONS, OPTIONS, audit_record, golden_cases, golden_records, json_like
from .ocsf_check import OCSF_1_8, OcsfSchema

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
