from __future__ import annotations

import time

from forwarder.records import parse_record
from forwarder.streams import DOMAIN_HISTORY_S, Ownership, Stream, plan_streams, user_email
from forwarder.timeutil import format_us, now_us


def record(action, obj, age_days=1.0, actor="alice@example.com"):
    created = format_us(now_us() - int(age_days * 86400 * 1_000_000))
    raw = {
        "action": action,
        "filterable_action": action,
        "user": actor,
        "object": obj,
        "changes": {},
        "created_at": created,
    }
    return parse_record(raw)


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


def test_domain_record_goes_to_the_configured_domain_stream_only():
    user, domain = Stream("user", "alice@example.com"), Stream("domain", "bücher.example")
    own = Ownership([user, domain], time.time())
    punycode = record("domain.update", "xn--bcher-kva.example")
    assert own.keeps(domain, punycode) and not own.keeps(user, punycode)
    # Not configured, or older than the domain history: the user stream keeps it.
    assert own.keeps(user, record("domain.update", "other.example"))
    assert own.keeps(user, record("domain.update", "bücher.example", age_days=DOMAIN_HISTORY_S / 86400 + 1))
    # Other actions on a domain stay with the user stream (DESIGN: only domain.* moves).
    assert own.keeps(user, record("dkim_record_source.update", "bücher.example"))


def test_a_filtered_domain_stream_does_not_take_what_it_never_fetches():
    user, domain = Stream("user", "alice@example.com"), Stream("domain", "example.com", "domain.update")
    own = Ownership([user, domain], time.time())
    assert not own.keeps(user, record("domain.update", "example.com"))
    assert own.keeps(user, record("domain.create", "example.com"))


def test_other_actions_in_a_domain_trail_belong_to_the_actor_stream():
    user, domain = Stream("user", "alice@example.com"), Stream("domain", "example.com")
    dkim = record("dkim_record_source.update", "example.com", actor="Alice@Example.com")
    own = Ownership([user, domain], time.time())
    assert own.keeps(user, dkim) and not own.keeps(domain, dkim)
    # Without the actor's stream (users not pulled, or another user), the domain stream ships it.
    assert Ownership([domain], time.time()).keeps(domain, dkim)
    assert own.keeps(domain, record("dkim_record_source.update", "example.com", actor="bob@example.com"))


def test_domain_records_past_the_history_go_to_the_actor_so_each_is_shipped_once():
    user, domain = Stream("user", "alice@example.com"), Stream("domain", "example.com")
    old = record("domain.update", "example.com", age_days=DOMAIN_HISTORY_S / 86400 + 3)
    own = Ownership([user, domain], time.time())
    assert [own.keeps(user, old), own.keeps(domain, old)] == [True, False]
    assert Ownership([domain], time.time()).keeps(domain, old)


def test_names_keep_the_first_spelling_and_ownership_matches_any_case():
    plan = plan_streams(["user"], ["Alice@Example.com", "alice@example.com", "bob@x.y"], [], [])
    assert [(s.name, s.key) for s in plan] == [
        ("Alice@Example.com", "user/alice@example.com"),
        ("bob@x.y", "user/bob@x.y"),
    ]
    ownership = Ownership(plan, time.time())
    bob = plan[1]
    assert ownership.owner(record("user.login", "x", actor="ALICE@example.COM"), bob) == plan[0]
    assert ownership.keeps(bob, record("user.login", "x", actor="carol@x.y"))  # nobody else pulls carol


class Touched(Stream):
    """A planned stream that counts every look at it (attribute read or method call)."""

    looks = 0

    def __getattribute__(self, name):
        if not name.startswith("__"):
            Touched.looks += 1
        return super().__getattribute__(name)


def test_ownership_per_record_work_does_not_grow_with_the_number_of_planned_streams():
    probes = [
        record("user.login", "x", actor="User42@example.com"),  # a planned user's record
        record("user.login", "x", actor="nobody@example.com"),  # an actor nobody pulls
        record("domain.update", "Example.COM", actor="user7@example.com"),  # a planned domain's record
        record("domain.update", "unplanned.example", actor="user7@example.com"),  # its actor's then
        record("domain.update", "example.com", age_days=400, actor="user7@example.com"),  # past the history
    ]
    looks, owners = {}, {}
    for size in (50, 500, 5000):
        users = ["fetcher@example.com"] + [f"user{i}@example.com" for i in range(size)]
        planned = plan_streams(["user", "domain"], users, ["example.com"], [])
        plan = [Touched(s.object_type, s.name, s.filter) for s in planned]
        ownership = Ownership(plan, time.time())
        fetched_by = next(s for s in plan if s.name == "fetcher@example.com")
        Touched.looks = 0
        owners[size] = [ownership.owner(r, fetched_by).key for r in probes]
        looks[size] = Touched.looks
    assert owners[50] == [
        "user/user42@example.com",
        "user/fetcher@example.com",
        "domain/example.com",
        "user/user7@example.com",
        "user/user7@example.com",
    ]
    assert owners[500] == owners[5000] == owners[50]
    assert looks[50] == looks[500] == looks[5000], (
        f"looks at planned streams for 5 records, by plan size: {looks}"
    )
