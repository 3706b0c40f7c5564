"""OCSF 1.3 for Security Lake: every event of the OCSF 1.8 normalizer, downgraded, conforms to the
vendored OCSF 1.3.0 schema (tests/schemas/ocsf-1.3.0-iam.json), and nothing the 1.8 event says is
lost: the risk attributes 1.3 lacks are still in ``unmapped.risk`` and the severity."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder.normalize.ocsf import RISK_LEVEL, to_ocsf
from forwarder.normalize.ocsf_1_3 import downgrade

from . import API_ACTIONS, OPTIONS, audit_record, golden_cases, golden_records, json_like
from .ocsf_check import OCSF_1_3, OCSF_1_8, OcsfSchema

OCSF13 = OcsfSchema(OCSF_1_3)


@pytest.mark.parametrize("case", golden_cases())
def test_golden_events_conform_to_1_3(case):
    for record in golden_records(case):
        assert OCSF13.check_event(downgrade(to_ocsf(record, OPTIONS))) == []


def test_the_1_8_events_do_not_conform_to_1_3_as_they_are():
    """What the downgrade is for: 1.3 knows neither the version nor the risk attributes."""
    problems = OCSF13.check_event(to_ocsf(golden_records("domain_update_dmarc_weakened")[0], OPTIONS))
    assert "metadata.version is not the schema's" in problems
    assert any("risk_score is not an attribute" in p for p in problems)


def test_the_1_3_events_do_not_pass_for_1_8():
    """The check tells the versions apart: a downgraded event is no 1.8 event."""
    event = downgrade(to_ocsf(golden_records("user_login")[0], OPTIONS))
    assert "metadata.version is not the schema's" in OcsfSchema(OCSF_1_8).check_event(event)


def test_nothing_the_risk_attributes_said_is_lost():
    for case in golden_cases():
        for record in golden_records(case):
            event = to_ocsf(record, OPTIONS)
            older = downgrade(event)
            assert older["unmapped"]["risk"]["score"] == event["risk_score"]
            assert ", ".join(older["unmapped"]["risk"]["reasons"]) == event.get("risk_details", "")
            level_id = next(n for n, name in RISK_LEVEL.values() if name == event["risk_level"])
            assert older["severity_id"] == level_id + 1
            assert "security_control" not in older["metadata"].get("profiles", [])
            assert "risk_score" in event  # the 1.8 event itself is left as it was


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20))
VALUES = json_like(SCALARS, max_size=3, max_leaves=8)
ACTIONS = st.sampled_from([*API_ACTIONS, "user.create", "user.delete", "dkim_record_source.update", "x.y"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(action=ACTIONS, user=VALUES, obj=VALUES, changes=VALUES, stream=st.sampled_from(["user", "domain"]))
def test_arbitrary_records_conform_to_1_3(action, user, obj, changes, stream):
    assert (
        OCSF13.check_event(downgrade(to_ocsf(audit_record(action, user, obj, changes, stream), OPTIONS)))
        == []
    )
