"""jsonutil gives the same exact bytes with and without orjson, whatever numbers or text it meets."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forwarder import jsonutil


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


def test_deep_nesting_is_written_without_recursion(engine):
    value: list = []
    for _ in range(4999):  # past any recursion limit of the encoders
        value = [value]
    assert jsonutil.dumps(value) == ("[" * 5000 + "]" * 5000).encode()
    assert jsonutil.canonical({"b": 1, "a": [{"d": 2, "c": value[0][0][0]}]}).startswith(b'{"a":[{"c":')


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
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
@given(st.lists(st.none() | st.booleans() | st.integers() | st.text(), max_size=5))
def test_values_serialized_each_are_each_dumps(values):  # floats: the engines write them differently
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
