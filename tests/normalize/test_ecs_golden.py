"""Golden files: tests/golden/ecs/<case>.json holds input records, <case>.json-expected.json the events.

Regenerate with GOLDEN_UPDATE=1 and review the diff by eye: the expected files are the spec.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import pytest

from forwarder import jsonutil
from forwarder.normalize import get_formatter
from forwarder.normalize.ecs import format_ecs, to_ecs
from forwarder.normalize.raw import format_raw
from forwarder.records import parse_record

from . import API_ACTIONS, OPTIONS, expected_path, golden_cases, golden_records


def render(events: list[dict]) -> str:
    return json.dumps(events, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("case", golden_cases())
def test_golden(case):
    actual = render([to_ecs(record, OPTIONS) for record in golden_records(case)])
    path = expected_path(case)
    if os.environ.get("GOLDEN_UPDATE") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path.name} is missing: run with GOLDEN_UPDATE=1, then review it"
    assert json.loads(actual) == json.loads(path.read_text(encoding="utf-8"))


def test_no_orphan_expected_files():
    cases = set(golden_cases())
    orphans = [p.name for p in expected_path("x").parent.glob("*-expected.json") if p.name[:-19] not in cases]
    assert orphans == []


def test_golden_inputs_cover_every_api_action():
    seen = {r.action for case in golden_cases() for r in golden_records(case)}
    assert seen >= set(API_ACTIONS)


def all_records():
    return [record for case in golden_cases() for record in golden_records(case)]


def test_format_ecs_serializes_to_ecs():
    for record in all_records():
        event = format_ecs(record, OPTIONS)
        assert event.id == record.event_id
        assert event.time_us == record.ts_us
        assert event.is_json
        assert event.body == jsonutil.dumps(to_ecs(record, OPTIONS))


def test_event_original_hashes_to_event_id():
    for record in all_records():
        ecs_event = to_ecs(record, OPTIONS)["event"]
        assert hashlib.sha256(ecs_event["original"].encode("utf-8")).hexdigest() == ecs_event["id"]


def test_same_record_same_bytes_whatever_the_key_order():
    for record in all_records():
        reordered = {key: record.raw[key] for key in reversed(list(record.raw))}
        if isinstance(reordered.get("changes"), dict):
            reordered["changes"] = dict(reversed(list(reordered["changes"].items())))
        again = parse_record(reordered, record.object_type)
        assert format_ecs(again, OPTIONS).body == format_ecs(record, OPTIONS).body


def test_include_original_false_leaves_it_out():
    record = all_records()[0]
    event = to_ecs(record, dataclasses.replace(OPTIONS, include_original=False))
    assert "original" not in event["event"]
    assert event["event"]["id"] == record.event_id


def test_observer_and_ingest_time_come_from_options():
    record = all_records()[0]
    opts = dataclasses.replace(OPTIONS, ingest_time_us=1_000_001, vendor="V", product="P")
    event = to_ecs(record, opts)
    assert event["observer"] == {"vendor": "V", "product": "P"}
    assert event["event"]["created"] == "1970-01-01T00:00:01.000001Z"


def test_raw_body_is_the_canonical_record():
    for record in all_records():
        event = format_raw(record, OPTIONS)
        assert json.loads(event.body) == record.raw
        assert hashlib.sha256(event.body).hexdigest() == record.event_id == event.id
        assert event.time_us == record.ts_us


def test_registry_resolves_both_formats():
    assert get_formatter("ecs") is format_ecs
    assert get_formatter("raw") is format_raw


def test_message_is_one_bounded_line():
    raw = {
        "filterable_action": "domain.update",
        "action": "Line one\r\nline two\u2028three",
        "user": "alice@example.com",
        "object": "a" * 5000 + ".example",
        "created_at": "2026-01-02T03:04:05Z",
    }
    message = to_ecs(parse_record(raw, "domain"), OPTIONS)["message"]
    assert len(message) == 1024 and message.endswith("…")
    short = dict(raw, object="example.org")
    message = to_ecs(parse_record(short, "domain"), OPTIONS)["message"]
    assert message == "alice@example.com updated domain example.org: Line one line two three"


def test_a_message_is_one_line_whatever_its_headline_and_detail_hold():
    raw = {
        "filterable_action": "user.update_roles",
        "user": "eve\r\n@example.com",
        "object": "bob@example.com",
        "changes": {"roles": [[], ["A\u2028\x00B"]]},
        "created_at": "2026-01-02T03:04:05Z",
    }
    message = to_ecs(parse_record(raw), OPTIONS)["message"]
    assert message == "eve @example.com changed roles of bob@example.com: +A B"
