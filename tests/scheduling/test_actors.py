"""Actors the users endpoint does not list: found in records, kept for their retention, then dropped."""

from __future__ import annotations

from forwarder.records import parse_record
from forwarder.scheduling.actors import (
    ACTOR_RETENTION_S,
    DEPARTED_RETENTION_S,
    active_in,
    actors_in,
    extra_users,
    note_actors,
    note_listing,
)
from forwarder.scheduling.marks import Book

T0 = 1_800_000_000


def record(action, user, obj):
    raw = {"action": action, "user": user, "object": obj, "created_at": "2026-01-01T00:00:00Z"}
    return parse_record(raw, "domain")


def test_actors_and_the_targets_of_user_actions():
    found = actors_in(
        [
            record("domain.update", "Support@Vendor.example", "example.com"),
            record("user.update_roles", "admin@x", "new.hire@x"),
            record("domain.update", "api-client", "example.com"),  # not an address
        ]
    )
    assert found == {"support@vendor.example", "admin@x", "new.hire@x"}


def test_discovered_and_departed_users_are_pulled_until_their_retention_ends():
    book = Book()
    note_listing(book, ["a@x", "b@x"], None, T0)
    note_actors(book, {"ghost@y", "a@x"}, ["a@x", "b@x"], T0)
    assert extra_users(book, ["a@x", "b@x"], T0) == ["ghost@y"]
    note_listing(book, ["a@x"], ["a@x", "b@x"], T0 + 10)  # b left the list
    assert extra_users(book, ["a@x"], T0 + 10) == ["b@x", "ghost@y"]
    assert extra_users(book, ["a@x"], T0 + 10 + DEPARTED_RETENTION_S + 1) == ["ghost@y"]
    assert extra_users(book, ["a@x"], T0 + ACTOR_RETENTION_S + 1) == []
    assert book.actors == {} and book.departed == {}


def test_a_user_listed_again_is_no_longer_extra():
    book = Book(actors={"ghost@y": T0}, departed={"b@x": T0})
    note_listing(book, ["ghost@y", "b@x"], ["a@x"], T0 + 1)
    assert extra_users(book, ["ghost@y", "b@x"], T0 + 1) == ["a@x"]  # a left meanwhile
    assert book.actors == {} and book.departed == {"a@x": T0 + 1}


def test_actors_active_in_another_trail_than_their_own():
    records = [
        record("domain.update", "Admin@x", "example.com"),
        record("user.update_roles", "admin@x", "new.hire@x"),  # the target is not active
        record("domain.update", "api-client", "example.com"),  # not an address
    ]
    assert active_in("domain", "example.com", records) == {"admin@x"}
    assert active_in("user", "ADMIN@x", records) == set()  # its own trail: a delivery, not a sign
