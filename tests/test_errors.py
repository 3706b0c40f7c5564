"""Configuration problems are structured (the setting to fix, what is wrong) and read as before."""

from __future__ import annotations

import pytest

from forwarder.errors import ConfigError, Problem, describe


@pytest.mark.parametrize(
    ("text", "variable", "message"),
    [
        ("FORWARDER_SINK: required", "FORWARDER_SINK", "required"),
        ("hec_index: expected text: got 5", "hec_index", "expected text: got 5"),
        ("--tenant: no tenant 'c' in FORWARDER_TENANTS", "--tenant", "no tenant 'c' in FORWARDER_TENANTS"),
        ("FORWARDER_SINK scheme 'x' is not supported", "", "FORWARDER_SINK scheme 'x' is not supported"),
        ("FORWARDER_CLIENT_ID/FORWARDER_CLIENT_SECRET or FORWARDER_CREDENTIALS: required", "", None),
        ("FORWARDER_X: two\nlines", "FORWARDER_X", "two\nlines"),
    ],
)
def test_a_problem_read_from_its_text_gives_the_same_text_back(text, variable, message):
    problem = Problem.parse(text)
    assert (problem.variable, problem.message) == (variable, text if message is None else message)
    assert str(problem) == text


def test_a_config_error_holds_its_problems_structured_and_as_text():
    error = ConfigError([Problem("hec_index", "expected text"), "FORWARDER_FORMAT: choose from ecs, cef"])
    assert error.structured == [
        Problem("hec_index", "expected text"),
        Problem("FORWARDER_FORMAT", "choose from ecs, cef"),
    ]
    assert error.problems == ["hec_index: expected text", "FORWARDER_FORMAT: choose from ecs, cef"]
    assert (
        str(error)
        == "invalid configuration:\n  - hec_index: expected text\n  - FORWARDER_FORMAT: choose from ecs, cef"
    )
    assert describe(error) == "hec_index: expected text; FORWARDER_FORMAT: choose from ecs, cef"


def test_a_problem_is_a_value():
    with pytest.raises(AttributeError):
        Problem("a", "b").variable = "c"  # type: ignore[misc]
    assert Problem("a", "b") == Problem.parse("a: b") and len({Problem("a", "b"), Problem("a", "b")}) == 1
