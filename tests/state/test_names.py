"""Store names bounded to a store's limit: short names as they are, long ones cut with a hash."""

from __future__ import annotations

import pytest

from forwarder.state.names import HASH_CHARS, bounded, is_bounded


def test_a_name_that_fits_is_kept_as_it_is():
    assert bounded("user%2Fa@example.com", "user/a@example.com", 100, "~") == "user%2Fa@example.com"


def test_a_long_name_is_cut_whole_characters_and_hashed_within_the_limit():
    key = "domain/" + "ü" * 3000
    name = bounded(key, key, 2048, "…")

    assert len(name.encode()) <= 2048 and is_bounded(name, "…")
    assert name.startswith("domain/ü") and "\ufffd" not in name  # no character cut in two
    assert name == bounded(key, key, 2048, "…")  # stable
    assert name != bounded(key + "x", key + "x", 2048, "…")  # the hash is of the whole key


def test_a_name_holding_the_mark_is_always_hashed():
    shaped = "user/a" + "…" + "0" * HASH_CHARS
    assert bounded(shaped, shaped, 2048, "…") != shaped


def test_a_limit_with_no_room_for_the_hash_is_refused():
    with pytest.raises(ValueError, match="10 bytes"):
        bounded("x" * 20, "x" * 20, 10, "~")
