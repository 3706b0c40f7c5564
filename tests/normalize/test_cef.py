"""CEF golden files: every ECS golden input (tests/golden/ecs/<case>.json) plus the CEF-only inputs in
tests/golden/cef/<case>.json render to tests/golden/cef/<case>.cef, one line per record.

Regenerate with GOLDEN_UPDATE=1 and review the diff by eye: the expected files are the spec.

Hostile values (pipes, equals signs, backslashes, CR/LF, non-ASCII, 10 kB) survive the CEF formatter:
the strict parser reads every field back exactly (or cut to its ArcSight length), and no value leaks
into another field.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder.normalize import cef, get_formatter
from forwarder.normalize.cef import (
    CS_LIMIT,
    LIMITS,
    NAME_LIMIT,
    cut,
    escape_header,
    escape_value,
    format_cef,
    to_cef,
)
from forwarder.normalize.changes import safe_names
from forwarder.normalize.memo import MAX_TEXT
from forwarder.records import AuditRecord, parse_record
from tests.cef_parser import CefError, parse

from . import OPTIONS, golden_cases, golden_records

CEF_DIR = Path(__file__).resolve().parents[1] / "golden" / "cef"


def own_cases() -> list[str]:
    return sorted(path.stem for path in CEF_DIR.glob("*.json"))


def records(case: str) -> list[AuditRecord]:
    if case in own_cases():
        return [
            parse_record(raw) for raw in json.loads((CEF_DIR / f"{case}.json").read_text(encoding="utf-8"))
        ]
    return golden_records(case)


def all_cases() -> list[str]:
    return sorted(set(golden_cases()) | set(own_cases()))


@pytest.mark.parametrize("case", all_cases())
def test_golden(case):
    actual = "".join(to_cef(record, OPTIONS) + "\n" for record in records(case))
    path = CEF_DIR / f"{case}.cef"
    if os.environ.get("GOLDEN_UPDATE") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path.name} is missing: run with GOLDEN_UPDATE=1, then review it"
    assert actual == path.read_text(encoding="utf-8")


def test_no_orphan_expected_files():
    assert sorted(path.stem for path in CEF_DIR.glob("*.cef")) == all_cases()


@pytest.mark.parametrize("case", all_cases())
def test_every_golden_line_parses_strictly_and_carries_its_event_id(case):
    for record in records(case):
        cef = parse(to_cef(record, OPTIONS))
        assert cef.labelled()["eventId"] == record.event_id
        assert cef.extension["rt"] == str(record.ts_us // 1000)
        assert (cef.vendor, cef.product, cef.product_version) == ("Fortra", "EmailAuth Platform", "v1")


def test_format_cef_is_a_text_event():
    record = golden_records("user_login")[0]
    event = format_cef(record, OPTIONS)
    assert (event.id, event.time_us, event.is_json) == (record.event_id, record.ts_us, False)
    assert event.body == to_cef(record, OPTIONS).encode("utf-8")
    assert get_formatter("cef") is format_cef


def test_hostile_values_land_in_their_own_fields():
    record = records("hostile_values")[0]
    cef = parse(to_cef(record, OPTIONS))
    assert cef.signature_id == "domain.update"
    assert cef.name == "Pipe | back\\slash | equals = sign new line"  # no CR/LF in a header
    assert cef.extension["suser"] == "ev|l=user\\@example.com"
    assert cef.extension["dhost"] == "x=1 y\\z|w.example"
    labelled = cef.labelled()
    assert labelled["spf_record after"] == "v=spf1 include:a|b\\c=d\r\n+all"
    assert labelled["k_e_y_s before"] == "a\nb"


def test_a_value_cannot_forge_a_key():
    record = records("hostile_values")[1]
    cef = parse(to_cef(record, OPTIONS))
    assert cef.labelled()["full_name before"] == "cs6=forged eventId"
    assert cef.labelled()["full_name after"] == " msg=forged "
    assert cef.labelled()["eventId"] == record.event_id
    assert cef.extension["duser"] == " bob@example.com "


def test_custom_strings_are_cut_to_arcsight_lengths():
    cef = parse(to_cef(records("hostile_values")[1], OPTIONS))
    note = cef.labelled()["note before"]
    assert len(note) == 4000 and note.endswith("…")
    assert "note after" not in cef.labelled()  # null is left out


@pytest.mark.parametrize(
    ("case", "index", "severity"),
    [
        ("user_login", 0, "3"),
        ("user_update", 0, "5"),
        ("domain_destroy", 0, "7"),
        ("user_update_roles_grant", 0, "8"),  # OrganizationAdminRole granted
        ("user_update_roles_grant", 1, "5"),  # AuditingRole granted
        ("hostile_values", 0, "9"),  # an SPF record opened with +all
        ("hostile_values", 2, "5"),  # an admin role revoked
        ("hostile_values", 3, "5"),  # "SuperAdmin" granted: not one of the platform's admin roles
        ("domain_update_dmarc_weakened", 0, "8"),
        ("domain_update_dmarc_weakened", 8, "6"),  # only the reports lost
        ("domain_update_dmarc_tightened", 0, "5"),
        ("domain_update_spf", 0, "8"),  # -all -> ~all
        ("domain_update_dkim", 0, "8"),  # key revoked
    ],
)
def test_severity(case, index, severity):
    assert parse(to_cef(records(case)[index], OPTIONS)).severity == severity


def test_roles_and_dmarc_take_the_first_slots_and_every_key_is_listed():
    ext = parse(to_cef(records("hostile_values")[4], OPTIONS)).extension
    assert (ext["cs1Label"], ext["cs1"]) == ("roles before", "[]")
    assert (ext["cs2Label"], ext["cs2"]) == ("roles after", '["X"]')
    assert "cs3" not in ext and "cs3Label" not in ext  # no DMARC record before: null is left out
    assert (ext["cs4Label"], ext["cs4"]) == ("dmarc_txt_record after", "v=DMARC1; p=none")
    assert (ext["cs5Label"], ext["cs5"]) == ("changedKeys", "a,b,c,dmarc_txt_record,roles,single")


def test_a_plan_is_kept_only_for_text_keys_short_enough_to_key_a_cache():
    """Keys 1 and true are equal in Python but not in JSON, and a long key must not pin memory."""
    change = {"user": "a@example.com", "object": "b@example.com", "action": "user.update"}
    change["created_at"] = "2026-01-05T08:15:30Z"
    long_key = "k" * (MAX_TEXT + 1)
    for changes in ({1: ["a", "b"]}, {True: ["a", "b"]}, {long_key: ["a", "b"]}):
        to_cef(AuditRecord(raw=dict(change, changes=changes), event_id="0" * 64, ts_us=0), OPTIONS)
        assert tuple(changes) not in cef._PLANS
    line = to_cef(parse_record(dict(change, changes={"full_name": ["A", "B"]})), OPTIONS)
    assert ("full_name",) in cef._PLANS
    assert "cs1Label=full_name before cs1=A" in line
    assert to_cef(parse_record(dict(change, changes={"full_name": ["A", "B"]})), OPTIONS) == line


HOSTILE = st.sampled_from([*"|=\\\r\n \t=| \\é例😀", "cs6=", " msg=", "\\n", "\\=", "CEF:0|"])
TEXT = st.one_of(
    st.lists(HOSTILE | st.characters(blacklist_categories=("Cs",)), max_size=40).map("".join),
    st.builds(lambda a, b: a * 10_000 + b, HOSTILE, st.text(max_size=5)),  # 10 kB values
)
NONEMPTY = TEXT.filter(bool)


@st.composite
def hostile_records(draw):
    kind = draw(st.sampled_from(["user.update", "domain.update"]))
    changes = draw(st.dictionaries(TEXT, st.tuples(TEXT, TEXT).map(list), max_size=3))
    return {
        "action": draw(TEXT),
        "filterable_action": kind,
        "user": draw(NONEMPTY),
        "object": draw(NONEMPTY),
        "changes": changes,
        "created_at": "2026-02-03T04:05:06.789012Z",
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_records())
def test_hostile_records_round_trip(raw):
    record = parse_record(raw)
    line = to_cef(record, OPTIONS)
    cef = parse(line)

    assert cef.name == cut(re.sub(r"[\r\n]+", " ", raw["action"] or raw["filterable_action"]), NAME_LIMIT)
    assert cef.extension["suser"] == cut(raw["user"], LIMITS["suser"])
    target_key = "duser" if raw["filterable_action"] == "user.update" else "dhost"
    assert cef.extension[target_key] == cut(raw["object"], LIMITS[target_key])
    labelled = cef.labelled()
    assert labelled["eventId"] == record.event_id
    names = safe_names(raw["changes"])
    first = {"roles": 0, "dmarc_txt_record": 1}
    slotted = sorted(names, key=lambda key: (first.get(key, 2), names[key]))[:2]
    for key in slotted:
        for side, value in zip(("before", "after"), raw["changes"][key]):
            if value:
                assert labelled[f"{names[key]} {side}"] == cut(value, CS_LIMIT)
    if names:
        assert labelled["changedKeys"] == cut(",".join(sorted(names.values())), CS_LIMIT)


@given(TEXT)
def test_extension_escaping_is_reversible(value):
    cef = parse(f"CEF:0|v|p|1|sig|name|5|cs1={escape_value(value)} cs1Label={escape_value(value)}")
    assert cef.extension == {"cs1": value, "cs1Label": value}


@given(TEXT)
def test_header_escaping_keeps_seven_fields(value):
    cef = parse(f"CEF:0|{escape_header(value)}|p|1|sig|{escape_header(value)}|5|")
    flat = re.sub(r"[\r\n]+", " ", value)
    assert (cef.vendor, cef.name, cef.extension) == (flat, flat, {})


def test_the_parser_is_strict():
    for bad in [
        "CEF:0|v|p|1|sig|name|5|a=b\nc=d",  # raw newline
        "CEF:0|v|p|1|sig|name|5|a=b=c",  # unescaped = in a value
        "CEF:0|v|p|1|sig|name|5|a=b\\tc",  # undefined escape
        "CEF:0|v|p|1|sig|name|5|a=1 a=2",  # repeated key
        "CEF:0|v|p|1|sig|name|a=1",  # six header fields
        "CEF:0|v|p|1|sig|name|11|",  # severity out of range
        "CEF:0|v|p|1|sig|name|5|junk a=1",  # text before the first key
    ]:
        try:
            parse(bad)
        except CefError:
            continue
        raise AssertionError(f"parsed: {bad!r}")
