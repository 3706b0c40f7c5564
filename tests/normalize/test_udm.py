"""The UDM format (forwarder/normalize/udm.py): each golden case and arbitrary records give a UDM event
the import accepts (the fake's checks of event types and their nouns), the event type the action
calls for, the same bytes whether filled into a cached template or rendered in full, and nothing a
record holds dropped (every ECS ``emailauth.audit`` leaf is an additional field)."""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder import jsonutil
from forwarder.normalize import NormalizeOptions
from forwarder.normalize.ecs import to_ecs
from forwarder.normalize.facts import facts
from forwarder.normalize.udm import _FORMAT, event_type, format_udm
from forwarder.records import parse_record
from tests.receivers.udm_checks import udm_problem

from . import API_ACTIONS, OPTIONS, golden_cases, golden_records, json_like

TYPES = {
    "user.login": "USER_LOGIN",
    "user.update": "USER_UNCATEGORIZED",
    "user.update_roles": "USER_CHANGE_PERMISSIONS",
    "domain.create": "USER_RESOURCE_CREATION",
    "domain.update": "USER_RESOURCE_UPDATE_CONTENT",
    "domain.destroy": "USER_RESOURCE_DELETION",
}


def leaves(doc: Any, prefix: str) -> Dict[str, Any]:
    if isinstance(doc, dict) and doc:
        found: Dict[str, Any] = {}
        for key, value in doc.items():
            found.update(leaves(value, f"{prefix}.{key}"))
        return found
    return {prefix: ("true" if doc else "false") if isinstance(doc, bool) else doc}


@pytest.mark.parametrize("case", golden_cases())
@pytest.mark.parametrize("include_original", [True, False])
def test_golden_cases_are_valid_udm_holding_every_audit_field(case, include_original):
    opts = NormalizeOptions(ingest_time_us=OPTIONS.ingest_time_us, include_original=include_original)
    for record in golden_records(case):
        body = format_udm(record, opts).body
        doc = json.loads(body)
        assert udm_problem(doc) is None, (case, doc)
        assert body == jsonutil.dumps(_FORMAT.document(record, opts))  # the template path renders alike
        assert doc["metadata"]["product_log_id"] == record.event_id
        ecs = to_ecs(record, opts)
        assert (
            doc["additional"]["fields"].items()
            >= leaves(ecs["emailauth"]["audit"], "emailauth.audit").items()
        )
        if include_original:
            assert doc["additional"]["fields"]["event.original"] == ecs["event"]["original"]


@pytest.mark.parametrize("action", API_ACTIONS)
def test_each_documented_action_has_its_event_type(action):
    obj = "example.com" if action.startswith("domain.") else "bob@example.com"
    changes = {"roles": [[], ["UserAdminRole"]]} if action == "user.update_roles" else {}
    record = parse_record(
        {
            "action": action,
            "filterable_action": action,
            "user": "alice@example.com",
            "object": obj,
            "changes": changes,
            "created_at": "2026-03-01T10:00:00Z",
        }
    )
    assert event_type(facts(record)) == TYPES[action]
    doc = json.loads(format_udm(record, OPTIONS).body)
    assert udm_problem(doc) is None
    if action == "user.update_roles":
        assert doc["target"]["user"]["attribute"]["roles"] == [{"name": "UserAdminRole"}]


def test_a_record_naming_no_actor_is_a_generic_event():
    record = parse_record(
        {"action": "domain.update", "object": "example.com", "created_at": "2026-03-01T10:00:00Z"}
    )
    doc = json.loads(format_udm(record, OPTIONS).body)
    assert doc["metadata"]["event_type"] == "GENERIC_EVENT" and "principal" not in doc
    assert udm_problem(doc) is None


scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    action=st.sampled_from([*API_ACTIONS, "user.create", "user.destroy", "spf_record_source.update", "odd"]),
    user=st.none() | st.sampled_from(["alice@example.com", "svc-bot", ""]),
    obj=json_like(scalars, 3, 4),
    changes=json_like(scalars, 3, 6),
)
def test_any_record_gives_udm_the_import_takes(action, user, obj, changes):
    raw = {
        "action": action,
        "user": user,
        "object": obj,
        "changes": changes,
        "created_at": "2026-03-01T10:00:00Z",
    }
    record = parse_record({k: v for k, v in raw.items() if v is not None})
    body = format_udm(record, OPTIONS).body
    assert udm_problem(json.loads(body)) is None
    assert body == jsonutil.dumps(_FORMAT.document(record, OPTIONS))
