"""The facts every format renders: the cache of change-less records gives what deriving gives, and no
event shares a container another event (or the cache) could be changed through."""

from __future__ import annotations

import hashlib

import pytest

from forwarder import jsonutil
from forwarder.normalize.cef import to_cef
from forwarder.normalize.ecs import to_ecs
from forwarder.normalize.facts import _derive, facts
from forwarder.normalize.ocsf import to_ocsf
from forwarder.records import AuditRecord, parse_record
from forwarder.simdata import generate_org

from . import OPTIONS, golden_cases, golden_records


def corpus() -> list[AuditRecord]:
    records = [record for case in golden_cases() for record in golden_records(case)]
    return records + [
        parse_record(raw) for raw in generate_org(3, now_us=1_772_366_400_000_000).all_records()
    ]


def test_cached_facts_are_the_derived_facts():
    for record in corpus():
        assert facts(record) == _derive(record.raw, record.object_type)


LOGIN = {
    "action": "user.login",
    "filterable_action": "user.login",
    "changes": {},
    "created_at": "2026-01-05T08:15:30Z",
}


@pytest.mark.parametrize("first, second", [(1, True), (1, 1.0), ("1", 1), (None, "null")])
def test_values_equal_in_python_but_not_in_json_are_told_apart(first, second):
    one = parse_record(dict(LOGIN, user=first, object=first))
    other = parse_record(dict(LOGIN, user=second, object=second))
    facts(one)  # warm the cache with the first
    assert facts(other) == _derive(other.raw, other.object_type)


def test_a_changed_event_leaves_the_next_one_alone():
    for record in corpus():
        for render in (to_ecs, to_ocsf):
            before = jsonutil.dumps(render(record, OPTIONS))
            spoil(render(record, OPTIONS))
            assert jsonutil.dumps(render(record, OPTIONS)) == before, record.raw
        line = to_cef(record, OPTIONS)
        spoil(to_ecs(record, OPTIONS))
        assert to_cef(record, OPTIONS) == line


def spoil(value: object) -> None:
    """Change every container in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            spoil(item)
        value["spoiled"] = True
    elif isinstance(value, list):
        for item in value:
            spoil(item)
        value.append("spoiled")


def test_records_carry_the_bytes_their_id_hashes():
    for record in corpus():
        assert record.canonical == jsonutil.canonical(record.raw)
        assert hashlib.sha256(record.canonical).hexdigest() == record.event_id
    by_hand = AuditRecord(raw={"id": "x"}, event_id="x", ts_us=0)
    assert by_hand.canonical == b'{"id":"x"}'
