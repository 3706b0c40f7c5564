from __future__ import annotations

import pytest

from forwarder.normalize.changes import (
    as_keyword,
    as_pair,
    as_text,
    flatten,
    role_diff,
    role_list,
    safe_name,
    safe_names,
)


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("dmarc_txt_record", "dmarc_txt_record"),
        ("Spf.Record", "spf_record"),
        ("DKIM  Selector", "dkim_selector"),
        ("a.b.c", "a_b_c"),
        ("café", "cafe"),
        ("__x__", "x"),
        ("", "unnamed"),
        ("...", "unnamed"),
        ("Σ", "unnamed"),
        ("k" * 100, "k" * 64),
        ("a" * 63 + ".b", "a" * 63),
    ],
)
def test_safe_name(key, name):
    assert safe_name(key) == name


def test_safe_names_are_unique_and_independent_of_input_order():
    keys = ["a_b", "a.b", "A B", ""]
    names = safe_names(keys)
    assert names == {"A B": "a_b", "a.b": "a_b_2", "a_b": "a_b_3", "": "unnamed"}
    assert safe_names(reversed(keys)) == names
    assert len(set(names.values())) == len(keys)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("as is", "as is"),
        (None, None),
        (True, "true"),
        (3, "3"),
        (1.5, "1.5"),
        ({"b": 1, "a": [2]}, '{"a":[2],"b":1}'),
        (["x", {"y": "é"}], '["x",{"y":"é"}]'),
    ],
)
def test_as_text(value, text):
    assert as_text(value) == text


def test_as_keyword_keeps_lists_of_scalars_and_serializes_nesting():
    assert as_keyword(["a", 1, None, False]) == ["a", "1", None, "false"]
    assert as_keyword([]) == []
    assert as_keyword([["a"]]) == '[["a"]]'
    assert as_keyword({"k": "v"}) == '{"k":"v"}'
    long = "x" * 100_000
    assert as_keyword(long) == long  # never truncated


def test_as_pair_takes_exactly_two_elements():
    assert as_pair(["a", "b"]) == ("a", "b")
    assert as_pair([None, ["r"]]) == (None, ["r"])
    for not_a_pair in (["a"], ["a", "b", "c"], "ab", ("a", "b"), None, {"a": "b"}):
        assert as_pair(not_a_pair) is None


def test_flatten_pairs_and_other_shapes():
    flat = flatten(
        {
            "dmarc_txt_record": ["v=DMARC1; p=reject", "v=DMARC1; p=none"],
            "roles": [["A"], ["A", "B"]],
            "three": [1, 2, 3],
            "nested": {"x": {"y": 1}},
            "pair_of_objects": [{"x": 1}, None],
            "scalar": 7,
            "Odd.Key": ["1", "2"],
        }
    )
    assert flat == {
        "dmarc_txt_record": {"before": "v=DMARC1; p=reject", "after": "v=DMARC1; p=none"},
        "roles": {"before": ["A"], "after": ["A", "B"]},
        "three": {"value": ["1", "2", "3"]},
        "nested": {"value": '{"x":{"y":1}}'},
        "pair_of_objects": {"before": '{"x":1}', "after": None},
        "scalar": {"value": "7"},
        "odd_key": {"before": "1", "after": "2", "key": "Odd.Key"},
    }


def test_flatten_output_never_holds_anything_but_keywords():
    flat = flatten({"k": [[{"a": 1}], [[1, 2]]], "j": [True, 2.5]})
    for entry in flat.values():
        for value in entry.values():
            assert value is None or isinstance(value, str) or all(isinstance(v, str) for v in value)


@pytest.mark.parametrize(
    ("value", "roles"),
    [
        (["B", "A"], ["B", "A"]),
        (["A", "A", None, 3], ["A", "3"]),
        ("A", ["A"]),
        (None, []),
        ([], []),
        ({"role": "A"}, None),
        ([["A"]], None),
    ],
)
def test_role_list(value, roles):
    assert role_list(value) == roles


def test_role_lists_equal_in_python_but_not_in_json_are_told_apart():
    # role sets are cached; each of these equals the next one in Python
    assert role_list(["A", 1, 1.0]) == ["A", "1", "1.0"] and role_list(["A", True, True]) == ["A", "true"]
    assert role_list(["A", 1]) == ["A", "1"] and role_list(["A", True]) == ["A", "true"]


def test_each_role_list_is_a_list_of_its_own():
    names = role_list(["B", "B", "C"])
    names.append("changed")
    assert role_list(["B", "B", "C"]) == ["B", "C"]


def test_role_diff_grant_revoke_both_and_none():
    assert role_diff(["R"], ["R", "Admin"]) == (["Admin"], [])
    assert role_diff(["R", "Admin", "B"], ["R"]) == ([], ["Admin", "B"])
    assert role_diff(["Z", "R"], ["Admin", "R", "C"]) == (["Admin", "C"], ["Z"])
    assert role_diff(["R"], ["R"]) == ([], [])
    assert role_diff([], []) == ([], [])
