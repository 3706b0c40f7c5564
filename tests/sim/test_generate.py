"""The generated organization: deterministic, shaped like the real one, with a consistent history."""

from __future__ import annotations

import collections

import pytest

from forwarder.sim.entities import ADMIN_ROLES, DESTROYED_DOMAIN, IDN_DOMAIN, ORG_DOMAIN
from forwarder.sim.generate import generate_org, generate_wide_org
from forwarder.timeutil import format_us, parse_duration, parse_iso
from tests.sim.helpers import DAY_US, NOW_US


def test_generation_is_deterministic_for_a_seed():
    assert generate_org(7, NOW_US).all_records() == generate_org(7, NOW_US).all_records()
    assert generate_org(7, NOW_US).user_list() == generate_org(7, NOW_US).user_list()
    assert generate_org(8, NOW_US).all_records() != generate_org(7, NOW_US).all_records()


def test_org_shape(org):
    assert 20 <= len(org.users) <= 30
    assert all(u.email.lower().endswith("@" + ORG_DOMAIN) for u in org.users)
    names = {d.name for d in org.domains}
    assert 5 <= len(names) <= 6 and IDN_DOMAIN in names
    assert [d.name for d in org.domains if d.destroyed] == [DESTROYED_DOMAIN]
    records = org.all_records()
    assert all(
        set(r) == {"action", "filterable_action", "user", "object", "changes", "created_at"} for r in records
    )
    assert all(format_us(parse_iso(r["created_at"])) == r["created_at"] for r in records)


def test_enough_records_within_13_months_across_user_and_domain_trails(org):
    since = format_us(NOW_US - parse_duration("13mo") * 1_000_000)
    reachable = set()
    for user in org.user_list():
        reachable |= {
            repr(r) for r in org.records_for("user", user["email"], NOW_US) if r["created_at"] >= since
        }
    for domain in org.domains:
        reachable |= {repr(r) for r in org.records_for("domain", domain.name, NOW_US)}
    assert len(reachable) >= 1400


def test_action_mix(org):
    records = org.all_records()
    by_action = collections.defaultdict(list)
    for r in records:
        by_action[r["filterable_action"]].append(r)
    assert len(by_action["user.login"]) > len(records) / 2
    assert all(r["changes"] == {} and r["action"] == "user.login" for r in by_action["user.login"])
    profile_keys = {k for r in by_action["user.update"] for k in r["changes"]}
    assert {"full_name", "email", "phone", "time_zone"} <= profile_keys
    assert all(len(v) == 2 for r in by_action["user.update"] for v in r["changes"].values())
    role_pairs = [r["changes"]["roles"] for r in by_action["user.update_roles"]]
    assert any(set(after) - set(before) & set(ADMIN_ROLES) for before, after in role_pairs)
    assert any(set(before) - set(after) & set(ADMIN_ROLES) for before, after in role_pairs)
    assert len(by_action["domain.destroy"]) == 1
    assert by_action["domain.destroy"][0]["object"] == DESTROYED_DOMAIN
    assert len(by_action["domain.create"]) == len(org.domains)
    assert {"dkim_record_source.update", "bimi_record_source.create"} <= set(by_action)
    for r in records:
        if r["filterable_action"].startswith("user."):
            assert r["action"] == r["filterable_action"]
        else:
            assert " " in r["action"]  # a human phrase
    update_keys = {k for r in by_action["domain.update"] for k in r["changes"]}
    assert {"dmarc_txt_record", "dmarc_updated_at", "spf_txt_record", "dkim_selector"} <= update_keys


def policy(record_text):
    tags = dict(t.strip().split("=", 1) for t in record_text.split(";") if "=" in t)
    return tags.get("p"), int(tags.get("pct", "100"))


def test_dmarc_changes_tighten_and_weaken(org):
    pairs = [
        r["changes"]["dmarc_txt_record"]
        for r in org.all_records()
        if "dmarc_updated_at" in r["changes"]  # a DMARC update, not the creation
    ]
    moves = {(policy(before)[0], policy(after)[0]) for before, after in pairs}
    assert ("reject", "none") in moves
    assert ("none", "quarantine") in moves or ("quarantine", "reject") in moves
    assert any(policy(after)[1] < policy(before)[1] for before, after in pairs)


def test_dmarc_history_is_consistent_per_domain(org):
    last = {}
    for r in org.all_records():
        changes = r["changes"]
        if "dmarc_txt_record" in changes:
            before, after = changes["dmarc_txt_record"]
            assert last.get(r["object"]) == before
            last[r["object"]] = after
            if "dmarc_updated_at" in changes:
                assert changes["dmarc_updated_at"][1] == r["created_at"]


def test_shared_timestamps_within_and_across_users(org):
    by_time = collections.defaultdict(list)
    for r in org.all_records():
        by_time[r["created_at"]].append(r["user"])
    shared = [actors for actors in by_time.values() if len(actors) > 1]
    assert any(len(set(actors)) == 1 for actors in shared)
    assert any(len(set(actors)) > 1 for actors in shared)


def test_a_wide_org_has_a_stream_per_user_and_domain_and_nothing_recent():
    org = generate_wide_org(12, 30, now_us=NOW_US)
    assert len(org.user_list()) == 12 and len(org.domain_list()) == 30
    records = org.all_records()
    assert len(records) == 42 and max(r["created_at"] for r in records) < format_us(NOW_US - 29 * DAY_US)
    assert all(org.records_for("domain", d.name, NOW_US) for d in org.domains)
    with pytest.raises(ValueError, match="more than 3 users"):
        generate_wide_org(3, 5)
