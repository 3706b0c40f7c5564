"""Golden files: tests/golden/ecs/<case>.json holds input records, <case>.json-expected.json the events.

Regenerate with GOLDEN_UPDATE=1 and review the diff by eye: the expected files are the spec.

Every emitted field is an ECS 9.4 field of the right type, or lives under emailauth.; and no two
events could ask Elasticsearch for conflicting mappings. Checked on the golden inputs and on
arbitrary JSON-ish records.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder import jsonutil
from forwarder.normalize import get_formatter
from forwarder.normalize.ecs import format_ecs, to_ecs
from forwarder.normalize.raw import format_raw
from forwarder.records import parse_record
from forwarder.timeutil import parse_iso

from . import API_ACTIONS, OPTIONS, expected_path, golden_cases, golden_records, json_like


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


SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "ecs_flat-9.4.0.yml"
CUSTOM_TEMPLATE = Path(__file__).resolve().parents[2] / "elasticsearch" / "component_template_emailauth.json"
NUMERIC_TYPES = {"integer", "long", "short", "byte"}
STRING_TYPES = {"keyword", "constant_keyword", "wildcard", "match_only_text", "text", "ip", "date"}
# ECS lists entity types with "etc."; a domain is not among them, and MAPPING.md asks for it.
OPEN_ALLOWED_VALUES = {"entity.target.type"}


@functools.cache
def ecs_fields() -> dict[str, dict]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with SCHEMA.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)


@functools.cache
def numeric_custom_fields() -> frozenset[str]:
    """The emailauth.* paths the index template maps as integers: the only custom numbers allowed."""

    def walk(properties: dict, prefix: str) -> Iterator[str]:
        for name, spec in properties.items():
            if "properties" in spec:
                yield from walk(spec["properties"], f"{prefix}{name}.")
            elif spec.get("type") in NUMERIC_TYPES:
                yield f"{prefix}{name}"

    template = json.loads(CUSTOM_TEMPLATE.read_text(encoding="utf-8"))
    return frozenset(walk(template["template"]["mappings"]["properties"], ""))


def leaves(doc: dict, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in doc.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from leaves(value, path + ".")
        else:
            yield path, value


def allowed(spec: dict) -> dict[str, list[str]]:
    return {item["name"]: item.get("expected_event_types", []) for item in spec.get("allowed_values", [])}


def type_problem(path: str, ecs_type: str, value: Any) -> str | None:
    if ecs_type in STRING_TYPES:
        if not isinstance(value, str):
            return f"{path}: {ecs_type} needs a string, got {value!r}"
        if ecs_type == "date":
            parse_iso(value)
    elif ecs_type == "boolean" and not isinstance(value, bool):
        return f"{path}: boolean needs a bool, got {value!r}"
    elif ecs_type not in ("boolean",):
        return f"{path}: ECS type {ecs_type} is not expected here"
    return None


def check_event(event: dict) -> list[str]:
    """Every problem with one emitted event; empty when it conforms."""
    fields = ecs_fields()
    required = [path for path, spec in fields.items() if spec.get("required")]
    present = dict(leaves(event))
    problems = [f"{path} is required" for path in required if path not in present]
    for path, value in leaves(event):
        values = value if isinstance(value, list) else [value]
        if path.startswith("emailauth."):
            kinds = {type(v) for v in values if v is not None}
            single = not isinstance(value, list)
            number = kinds == {int} and single and path in numeric_custom_fields()
            if not kinds <= {str} and not (kinds == {bool} and single) and not number:
                problems.append(f"{path}: custom fields are keywords, a bool or a mapped int, got {value!r}")
            continue
        spec = fields.get(path)
        if spec is None:
            problems.append(f"{path}: not an ECS 9.4 field")
            continue
        if "array" in spec.get("normalize", []) and not isinstance(value, list):
            problems.append(f"{path}: ECS wants an array")
        problems += [p for p in (type_problem(path, spec["type"], v) for v in values) if p]
        names = allowed(spec)
        if names and path not in OPEN_ALLOWED_VALUES:
            problems += [f"{path}: {v!r} is not an allowed value" for v in values if v not in names]
    categories = allowed(fields["event.category"])
    expected_types = {t for c in event["event"]["category"] for t in categories.get(c, [])}
    problems += [
        f"event.type {t!r} does not go with {event['event']['category']}"
        for t in event["event"]["type"]
        if t not in expected_types
    ]
    return problems


def mapping_conflicts(events: list[dict]) -> list[str]:
    """Paths that would get two mappings: a bool in one event and a string in another, or a leaf in
    one event and an object in another."""
    kinds: dict[str, set[str]] = {}
    for event in events:
        for path, value in leaves(event):
            values = value if isinstance(value, list) else [value]
            kinds.setdefault(path, set()).update(type(v).__name__ for v in values if v is not None)
    problems = [f"{path}: {sorted(k)}" for path, k in kinds.items() if len(k) > 1]
    objects = {path.rsplit(".", i)[0] for path in kinds for i in range(1, path.count(".") + 1)}
    problems += [f"{path}: both a value and an object" for path in kinds if path in objects]
    return problems


@functools.cache
def golden_events() -> tuple[dict, ...]:
    return tuple(to_ecs(record, OPTIONS) for case in golden_cases() for record in golden_records(case))


@pytest.mark.parametrize("case", golden_cases())
def test_golden_events_conform_to_ecs(case):
    for record in golden_records(case):
        assert check_event(to_ecs(record, OPTIONS)) == []


def test_golden_events_agree_on_mappings():
    assert mapping_conflicts(list(golden_events())) == []


def test_a_whole_simulated_organization_conforms_and_agrees_on_mappings():
    from forwarder.records import parse_record
    from forwarder.sim.generate import generate_org

    events = [to_ecs(parse_record(raw), OPTIONS) for raw in generate_org(7).all_records()]
    assert [problem for event in events for problem in check_event(event)] == []
    assert mapping_conflicts(events) == []


def login_event() -> dict:
    return to_ecs(golden_records("user_login")[0], OPTIONS)


@pytest.mark.parametrize(
    ("path", "value", "complaint"),
    [
        ("user.nickname", "x", "not an ECS 9.4 field"),
        ("event.kind", "incident", "not an allowed value"),
        ("event.type", ["creation"], "does not go with"),
        ("event.created", 1767000000, "needs a string"),
        ("related.user", "alice@example.com", "wants an array"),
        ("emailauth.audit.count", 3, "custom fields"),
        ("emailauth.audit.flags", [True], "custom fields"),
    ],
)
def test_the_schema_check_can_fail(path, value, complaint):
    event = login_event()
    *parents, leaf = path.split(".")
    node = event
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    problems = check_event(event)
    assert len(problems) == 1 and complaint in problems[0], problems


def test_required_fields_are_checked():
    event = login_event()
    del event["ecs"]
    assert check_event(event) == ["ecs.version is required"]


def test_the_mapping_check_can_fail():
    one, other = login_event(), login_event()
    one["emailauth"]["audit"]["flag"] = True
    other["emailauth"]["audit"]["flag"] = "true"
    other["emailauth"]["audit"]["object"] = {"nested": "x"}
    assert mapping_conflicts([one, other]) == [
        "emailauth.audit.flag: ['bool', 'str']",
        "emailauth.audit.object: both a value and an object",
    ]


# Arbitrary JSON-ish records: to_ecs never raises, and its output always conforms.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = json_like(scalars, max_size=4, max_leaves=12)
names = st.sampled_from(
    [*API_ACTIONS, "dkim_record_source.update", "user.", ".", "", "DMARC Record Updated"]
) | st.text(max_size=20)
people = st.sampled_from(
    [
        "alice@example.com",
        "Jörg@Bücher.example",
        "xn--bcher-kva.example",
        "_dmarc.example.org.",
        "a@b@c",
        "@",
        "",
    ]
) | st.text(max_size=30)
dmarc_records = st.lists(
    st.sampled_from(
        [
            "v=DMARC1",
            "p=reject",
            "p=none",
            "sp=quarantine",
            "np=none",
            "pct=50",
            "t=y",
            "adkim=s",
            "aspf=r",
            "rua=mailto:a@b.example",
            "ruf=",
            "x",
            "=",
            "",
        ]
    ),
    max_size=6,
).map("; ".join)
change_values = (
    st.tuples(dmarc_records | st.none(), dmarc_records | st.none()).map(list)
    | st.tuples(st.lists(st.text(max_size=8), max_size=3), st.lists(st.text(max_size=8), max_size=3)).map(
        list
    )
    | json_values
)
changes = (
    st.dictionaries(
        st.sampled_from(["roles", "dmarc_txt_record", "email", "full_name", "a.b", "A B", ""])
        | st.text(max_size=10),
        change_values,
        max_size=5,
    )
    | json_values
)
records = st.fixed_dictionaries(
    {
        "created_at": st.sampled_from(
            ["2026-01-02T03:04:05.123456Z", "2026-01-02T03:04:05+02:00", "2026-01-02 03:04:05"]
        )
    },
    optional={
        "action": names | json_values,
        "filterable_action": names | json_values,
        "user": people | json_values,
        "object": people | json_values,
        "changes": changes,
        "extra field": json_values,
    },
)
streams = st.sampled_from(["user", "domain"])


@settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(st.tuples(records, streams), min_size=1, max_size=4))
def test_any_record_gives_a_conforming_serializable_event(batch):
    events = []
    for raw, stream in batch:
        record = parse_record(raw, stream)
        event = to_ecs(record, OPTIONS)
        assert json.loads(json.dumps(event, allow_nan=False)) == event
        assert format_ecs(record, OPTIONS).body == jsonutil.dumps(event)
        assert to_ecs(record, OPTIONS) == event
        assert check_event(event) == []
        assert "\n" not in event["message"]
        events.append(event)
    assert mapping_conflicts(events + list(golden_events())) == []
