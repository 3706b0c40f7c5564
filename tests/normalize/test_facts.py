"""The facts every format renders: the cache of change-less records gives what deriving gives, and no
event shares a container another event (or the cache) could be changed through."""

from __future__ import annotations

import hashlib

import pytest

from forwarder import jsonutil
from forwarder.normalize.cef import to_cef
from forwarder.normalize.ecs import to_ecs
from forwarder.normalize.facts import _derive, _plain_facts, facts
from forwarder.normalize.memo import MAX_TEXT, text_cache
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


def test_long_strings_are_never_cache_keys():
    calls = []

    @text_cache(8)
    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    short, long = "a" * MAX_TEXT, "b" * (MAX_TEXT + 1)
    assert [upper(short), upper(short), upper(long), upper(long)] == [short.upper()] * 2 + [long.upper()] * 2
    assert calls == [short, long, long]

    before = _plain_facts.cache_info().currsize
    record = parse_record(dict(LOGIN, user="x" * MAX_TEXT + "@example.com", object="y"))
    assert facts(record) == _derive(record.raw, record.object_type)
    assert not facts(record).cacheable
    assert _plain_facts.cache_info().currsize == before
    assert "suser=" + "x" * 1000 in to_cef(record, OPTIONS)  # computed, not cached
