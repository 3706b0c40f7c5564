from __future__ import annotations

from forwarder.streams import plan_streams, user_email


def test_plan_deduplicates_case_insensitively_and_routes_filters_by_type():
    plan = plan_streams(
        ["user", "domain"],
        ["Alice@Example.com", "alice@example.com"],
        ["example.com"],
        ["user.login", "domain.", "x."],
    )
    assert [s.key for s in plan] == [
        "domain/example.com/domain.",
        "domain/example.com/x.",
        "user/alice@example.com/user.login",
        "user/alice@example.com/x.",
    ]
    assert [s.key for s in plan_streams(["user"], ["a@b.c"], ["example.com"], [])] == ["user/a@b.c"]


def test_users_endpoint_elements_of_any_shape():
    assert user_email("a@b.c") == "a@b.c"
    assert user_email({"email": "a@b.c", "full_name": "A"}) == "a@b.c"
    assert user_email({"username": "a@b.c"}) == "a@b.c"
    assert user_email({"id": 7}) is None and user_email(None) is None


def test_names_keep_the_first_spelling():
    plan = plan_streams(["user"], ["Alice@Example.com", "alice@example.com", "bob@x.y"], [], [])
    assert [(s.name, s.key) for s in plan] == [
        ("Alice@Example.com", "user/alice@example.com"),
        ("bob@x.y", "user/bob@x.y"),
    ]
