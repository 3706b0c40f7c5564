"""created_at as the events carry it: the canonical form is parsed by the fast path and used as given,
and every other form gives exactly what the general parser and format_us give."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forwarder.records import parse_record
from forwarder.timeutil import format_duration, format_us, parse_iso, parse_iso_any

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def carried(text: str) -> str:
    """The canonical text of a record's created_at, as the record carries it."""
    return parse_record({"created_at": text}).timestamp


def reference_format(us: int) -> str:
    return (_EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


moments = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))
fractions = st.sampled_from(["", ".1", ".123", ".123456", ".123456789", ",5"])
zones = st.sampled_from(["Z", "z", "", "+00:00", "+05:30", "-0800"])
separators = st.sampled_from(["T", "t", " "])


@given(moments, fractions, zones, separators)
def test_every_form_parses_as_the_general_parser_does(moment, fraction, zone, separator):
    text = moment.strftime("%Y-%m-%d") + separator + moment.strftime("%H:%M:%S") + fraction + zone
    if moment.year < 1000:
        text = f"{moment.year:04d}" + text[text.index("-") :]
    expected = parse_iso_any(text)
    assert parse_iso(text) == expected
    assert format_us(expected) == reference_format(expected)
    assert carried(text) == reference_format(expected)


@given(
    st.integers(
        min_value=parse_iso_any("1000-01-01T00:00:00Z"),
        max_value=parse_iso_any("9999-12-31T23:59:59.999999Z"),
    )
)
def test_the_canonical_form_is_carried_as_given(us):
    text = reference_format(us)
    assert parse_iso(text) == us
    assert carried(text) is text


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-05T08:15:30.123456Z",
        "2026-02-30T08:15:30.123456Z",
        "2026-01-05T24:00:00.000000Z",
        "2026-01-05T08:15:61.123456Z",
    ],
)
def test_out_of_range_canonical_values_fail_with_the_general_parsers_message(text):
    with pytest.raises(ValueError) as general:
        datetime(*(int(part) for part in re.split(r"[-T:.Z]", text)[:7]))
    with pytest.raises(ValueError) as fast:
        parse_iso(text)
    assert str(fast.value) == str(general.value)


def test_values_the_general_parser_rejects_are_rejected():
    for text in ("2025-W09-3T22:33:11.411706Z", "2025-02-26T22:33Z", "20250226T223311.411706Z"):
        with pytest.raises(ValueError):
            parse_iso(text)


@pytest.mark.parametrize("text", ["٢٠٢٦-01-05T08:15:30.123456Z", " 2026-01-05T08:15:30.123456Z"])
def test_odd_but_accepted_forms_are_reformatted(text):
    us = parse_iso_any(text)
    assert parse_iso(text) == us
    assert carried(text) == "2026-01-05T08:15:30.123456Z"


def test_years_before_1000_keep_the_unpadded_form_events_already_had():
    us = parse_iso("0999-12-31T23:59:59.999999Z")
    assert format_us(us) == reference_format(us)
    assert carried("0999-12-31T23:59:59.999999Z") == reference_format(us)
    first = "1000-01-01T00:00:00.000000Z"  # the first moment carried as given
    assert parse_iso(first) == us + 1 and carried(first) is first


_REFERENCE_CANONICAL = re.compile(r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
_TRICKY = "0123456789-:.TtZz+ ,W\u0663\uff11\x00"


def _outcome(parse, text):
    try:
        return parse(text)
    except ValueError as exc:
        return str(exc)


_NEAR_MISSES = [
    "2026-01-05T08:15:30.1+0000Z",  # an offset inside the fraction: the C parser reads it
    "2026-01-05T08:15:30.+00:00Z",  # an offset for the fraction: read as a zone before Python 3.11
    "2026-01-05T08:15:30.1-0130Z",
    "2026-01-05T08:15:30.12345\u0663Z",
    "\u0662026-01-05T08:15:30.123456Z",
    "0999-01-05T08:15:30.123456Z",
    "2026-01-05t08:15:30.123456Z",
    "2026-01-05T08:15:30.123456z",
]


@given(
    st.one_of(
        st.integers(
            min_value=parse_iso_any("0100-01-01T00:00:00Z"), max_value=parse_iso_any("9999-12-31T23:59:59Z")
        ),
        st.sampled_from(_NEAR_MISSES),
    ),
    st.lists(
        st.tuples(st.integers(0, 27), st.sampled_from(_TRICKY), st.sampled_from(["put", "insert", "drop"]))
    ),
)
def test_the_fast_path_accepts_exactly_the_canonical_form(start, edits):
    """Near-misses of the canonical form (a digit, separator or offset in the wrong place, one
    character more or less, non-ASCII digits) are parsed, refused and carried as the general
    parser does; only the canonical form itself is carried as given."""
    text = start if isinstance(start, str) else reference_format(start).zfill(27)
    for at, char, how in edits:
        at = min(at, len(text))
        text = {"put": text[:at] + char + text[at + 1 :], "insert": text[:at] + char + text[at:]}.get(
            how, text[:at] + text[at + 1 :]
        )
    assert _outcome(parse_iso, text) == _outcome(parse_iso_any, text)
    if _REFERENCE_CANONICAL.fullmatch(text) and isinstance(_outcome(parse_iso_any, text), int):
        assert carried(text) is text
    elif isinstance(_outcome(parse_iso_any, text), int):
        assert carried(text) == format_us(parse_iso_any(text))


@pytest.mark.parametrize(
    "seconds, text", [(0.25, "0.2s"), (42, "42s"), (61, "1m 1s"), (3 * 3600 + 120, "3h 2m"), (90061, "1d 1h")]
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text
