"""Hostile values (pipes, equals signs, backslashes, CR/LF, non-ASCII, 10 kB) survive the CEF formatter:
the strict parser reads every field back exactly (or cut to its ArcSight length), and no value leaks
into another field."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder.normalize.cef import CS_LIMIT, LIMITS, NAME_LIMIT, cut, escape_header, escape_value, to_cef
from forwarder.normalize.changes import safe_names
from forwarder.records import parse_record
from tests.cef_parser import CefError, parse

from . import OPTIONS

HOSTILE = st.sampled_from([*"|=\\\r\n \t=| \\é例😀", "cs6=", " msg=", "\\n", "\\=", "CEF:0|"])
TEXT = st.one_of(
    st.lists(HOSTILE | st.characters(blacklist_categories=("Cs",)), max_size=40).map("".join),
    st.builds(lambda a, b: a * 10_000 + b, HOSTILE, st.text(max_size=5)),  # 10 kB values
)
NONEMPTY = TEXT.filter(bool)


@st.composite
def records(draw):
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
@given(records())
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
