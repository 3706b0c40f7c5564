"""jsonutil gives the same exact bytes with and without orjson, whatever numbers or text it meets.

A record holding floats gets the same event id and the same event bytes whether orjson is
installed (Lambda, CLI) or not (the Splunk add-on's pure Python).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forwarder import jsonutil
from forwarder.normalize import NormalizeOptions, formats, get_formatter
from forwarder.records import parse_record


@pytest.fixture(params=["orjson", "stdlib"])
def engine(request, monkeypatch):
    if request.param == "stdlib":
        monkeypatch.setattr(jsonutil, "_orjson", None)
    elif not jsonutil.HAVE_ORJSON:
        pytest.skip("orjson is not installed (the pure-Python build)")
    return request.param


BIG = b'{"b":[1,-18446744073709551617,2.5],"a":123456789012345678901234567890,"c":9223372036854775808}'


def test_integers_of_any_size_round_trip_exactly(engine):
    value = jsonutil.loads(BIG)
    assert value["a"] == 123456789012345678901234567890 and isinstance(value["a"], int)
    assert jsonutil.dumps(value) == BIG
    assert jsonutil.canonical(value) == json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    "number",
    [b"-9223372036854775809", b"18446744073709551616", b"-1000000000000000000000"],  # 19 digits and more
)
def test_the_shortest_numbers_over_64_bits_are_read_exactly(engine, number):
    body = b'{"id":"1234567890123456789","n":[' + number + b"]}"
    value = jsonutil.loads(body)
    assert value["n"] == [int(number)] and jsonutil.dumps(value) == body
    assert jsonutil.loads(number) == int(number)  # the run at the very end of the text is found too


def test_text_that_is_not_unicode_is_read_but_never_written(engine):
    for body in (b'{"x":"bad \xff bytes"}', b'{"x":"\\ud800"}'):
        value = jsonutil.loads(body)
        with pytest.raises(ValueError):
            jsonutil.canonical(value)
        assert jsonutil.ascii_text(value).isascii()


def test_a_body_that_is_not_json_names_the_cause(engine):
    with pytest.raises(ValueError, match=r"Expecting|expected|unexpected|invalid"):
        jsonutil.loads(b"<html>")


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_and_infinity_are_not_json_and_are_refused(engine, constant):
    """The standard library would read them; written back they would become null, a changed record."""
    with pytest.raises(ValueError, match=r"not a JSON value|unexpected|invalid"):
        jsonutil.loads(b'{"x":' + constant + b"}")


def test_canonical_native_writes_only_what_proves_its_depth(engine):
    """What canonical_native writes nests NATIVE_DEPTH levels at most (the record depth check relies
    on it); deeper values, long integers and lone surrogates are left to canonical."""
    from forwarder.records import depth

    def nest(levels: int) -> object:
        value: object = 0
        for n in range(levels):
            value = [value] if n % 2 else {"k": value}
        return {"b": 1, "a": value}

    deepest, deeper = nest(jsonutil.NATIVE_DEPTH - 1), nest(jsonutil.NATIVE_DEPTH)
    assert depth(deepest) == jsonutil.NATIVE_DEPTH
    written = jsonutil.canonical_native(deepest)
    assert written == (jsonutil.canonical(deepest) if engine == "orjson" else None)
    for refused in (deeper, {"a": 2**64}, {"a": "\ud800"}):
        assert jsonutil.canonical_native(refused) is None


def test_deep_nesting_is_written_without_recursion(engine):
    value: list = []
    for _ in range(4999):  # past any recursion limit of the encoders
        value = [value]
    assert jsonutil.dumps(value) == ("[" * 5000 + "]" * 5000).encode()
    assert jsonutil.canonical({"b": 1, "a": [{"d": 2, "c": value[0][0][0]}]}).startswith(b'{"a":[{"c":')


FLOATS = st.floats(allow_nan=False, allow_infinity=False)
SCALARS = st.none() | st.booleans() | st.integers() | FLOATS | st.text()


@pytest.mark.parametrize(
    "number, spelled",
    [
        (1e-7, b"1e-7"),  # the standard library writes 1e-07
        (-2.5e-9, b"-2.5e-9"),
        (1e-5, b"0.00001"),  # and 1e-05
        (-1.25e-5, b"-0.0000125"),
        (1e-4, b"0.0001"),
        (1e-10, b"1e-10"),
        (5e-324, b"5e-324"),
        (1e16, b"1e+16"),
        (1.7976931348623157e308, b"1.7976931348623157e+308"),
        (1e15, b"1000000000000000.0"),
        (-0.0, b"-0.0"),
        (1.0, b"1.0"),
        (0.1, b"0.1"),
    ],
)
def test_floats_are_spelled_as_orjson_spells_them(engine, number, spelled):
    assert jsonutil.dumps(number) == spelled
    assert (
        jsonutil.canonical({"b": [number], "a": 2**70})
        == b'{"a":1180591620717411303424,"b":[' + spelled + b"]}"
    )
    assert jsonutil.loads(spelled) == number


def test_text_that_looks_like_a_float_stays_as_it_is(engine):
    value = {"host": "relay-05e-07", "n": "9e-05", "x": [1.5e-7]}
    assert jsonutil.dumps(value) == b'{"host":"relay-05e-07","n":"9e-05","x":[1.5e-7]}'


def test_floats_nested_deeply_are_spelled_the_same(engine):
    value: list = [1e-6]
    for _ in range(4999):
        value = [value]
    assert jsonutil.dumps(value) == b"[" * 5000 + b"1e-6" + b"]" * 5000


def test_quarantine_text_keeps_the_standard_spelling_whatever_the_depth():
    """ascii_text is written by the standard library in every runtime; its digest is an id."""
    assert jsonutil.ascii_text({"x": [1e-7]}) == '{"x":[1e-07]}'
    value: list = [1e-7]
    for _ in range(4999):
        value = [value]
    assert jsonutil.ascii_text(value) == "[" * 5000 + "1e-07" + "]" * 5000


@pytest.mark.parametrize("number", [b"1e400", b"-1.5E+309", b"123456789012345678901234567890e300"])
def test_a_number_past_the_float_range_is_refused(engine, number):
    """orjson would write the infinity it reads as null: a changed record, like NaN's."""
    with pytest.raises(ValueError, match=r"too large for a float"):
        jsonutil.loads(b'{"x":[' + number + b"]}")


@settings(max_examples=300, deadline=None)
@given(FLOATS, st.sampled_from(["{!r}", "{:.17g}", "{:.3e}", "{:f}", "{:.20E}"]))
def test_both_engines_read_a_float_to_the_same_value(number, form):
    text = form.format(number).encode()  # rounded to 3 digits, it may pass the float range

    def read() -> str:
        try:
            return repr(jsonutil.loads(text))  # repr: -0.0 and 0.0 differ
        except ValueError as exc:
            return str(exc)

    fast = read()
    original, jsonutil._orjson = jsonutil._orjson, None
    try:
        assert read() == fast
    finally:
        jsonutil._orjson = original


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        SCALARS,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
        max_leaves=20,
    )
)
def test_both_engines_give_the_same_bytes(value):
    fast = jsonutil.dumps(value), jsonutil.canonical(value)
    original, jsonutil._orjson = jsonutil._orjson, None
    try:
        assert (jsonutil.dumps(value), jsonutil.canonical(value)) == fast
        assert jsonutil.loads(fast[0]) == value
    finally:
        jsonutil._orjson = original


@settings(max_examples=100, deadline=None)
@given(st.lists(SCALARS, max_size=5))
def test_values_serialized_each_are_each_dumps(values):
    expected = tuple(jsonutil.dumps(value) for value in values)
    assert jsonutil.dumps_each(values) == expected
    original, jsonutil._orjson = jsonutil._orjson, None
    try:
        assert jsonutil.dumps_each(values) == expected
    finally:
        jsonutil._orjson = original


def test_a_value_orjson_refuses_is_still_serialized_with_the_others():
    assert jsonutil.dumps_each(["a", 2**70, "x"]) == (b'"a"', b"1180591620717411303424", b'"x"')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_json_text_goes_into_a_string_as_the_encoder_would_put_it(value):
    """What a template fills event.original with is what serializing the decoded text gives, for
    the text either engine writes (control characters, quotes, backslashes and all)."""
    for data in (jsonutil.dumps(value), jsonutil.canonical(value)):
        assert jsonutil.json_in_string(data) == jsonutil.string_content(data.decode("utf-8"))
        assert jsonutil.loads(b'"' + jsonutil.json_in_string(data) + b'"') == data.decode("utf-8")
    original, jsonutil._orjson = jsonutil._orjson, None
    try:
        data = jsonutil.canonical(value)
        assert jsonutil.json_in_string(data) == jsonutil.string_content(data.decode("utf-8"))
    finally:
        jsonutil._orjson = original


OPTIONS = NormalizeOptions(ingest_time_us=1_767_600_000_000_000)
VALUES = st.recursive(
    FLOATS | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


def events(body: bytes) -> list:
    """Each format's event of the record ``body`` as read from the wire."""
    record = parse_record(jsonutil.loads(body))
    return [record.event_id] + [get_formatter(name)(record, OPTIONS) for name in formats()]


@pytest.mark.skipif(not jsonutil.HAVE_ORJSON, reason="orjson is not installed (the pure-Python build)")
@settings(max_examples=150, deadline=None)
@given(
    action=st.sampled_from(["user.update", "login", "domain.update"]),
    changes=st.dictionaries(
        st.sampled_from(["ttl", "pct", "score", "x"]), st.tuples(VALUES, VALUES), max_size=3
    ),
    extra=FLOATS,
)
def test_a_record_with_floats_is_the_same_event_in_every_runtime(action, changes, extra):
    raw = {
        "action": action,
        "user": "a@example.com",
        "created_at": "2026-01-05T08:15:30.000000Z",
        "changes": {key: list(pair) for key, pair in changes.items()},
        "score": extra,
    }
    body = jsonutil.dumps(raw)
    with_orjson = events(body)
    original, jsonutil._orjson = jsonutil._orjson, None
    try:
        assert jsonutil.dumps(raw) == body
        assert events(body) == with_orjson
    finally:
        jsonutil._orjson = original
