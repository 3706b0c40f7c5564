"""How the simulated service lists: reply shape, paging, order, strictness, the unordered style."""

from __future__ import annotations

from forwarder.sim.endpoints import AUDITS_PATH, USERS_PATH
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import format_us
from tests.sim.helpers import NOW_US, audits, busiest_user, fetch_all, get


def test_envelope_style(make_sim, org):
    sim = make_sim()
    body = audits(sim, object_type="user", name=busiest_user(org), limit=10, offset=5).json()
    assert {k: body[k] for k in ("version", "status", "code", "offset", "count")} == {
        "version": 1,
        "status": "ok",
        "code": 200,
        "offset": 5,
        "count": 10,
    }
    assert len(body["audits"]) == 10
    users = get(sim, USERS_PATH, limit=200).json()
    assert users["count"] == len(users["users"]) == len(org.users)
    assert all(set(u) == {"email", "full_name", "roles"} for u in users["users"])


def test_bare_style(make_sim, org):
    sim = make_sim(style="bare")
    body = audits(sim, object_type="user", name=busiest_user(org)).json()
    assert isinstance(body, list) and len(body) == 25  # the default limit
    assert set(body[0]) == {"action", "filterable_action", "user", "object", "changes", "created_at"}
    users = get(sim, USERS_PATH, limit=10, offset=20).json()
    assert [u["email"] for u in users] == [u.email for u in org.users[20:]]


def test_paging_walks_the_whole_trail_with_a_short_last_page(make_sim, org):
    sim = make_sim()
    name = busiest_user(org)
    expected = sim.records_for("user", name)
    pages = fetch_all(sim, name, limit=50, sort="created_at ASC")
    assert all(len(p) == 50 for p in pages[:-1])
    assert len(pages[-1]) == len(expected) % 50
    assert [r for p in pages for r in p] == expected


def test_limit_over_the_maximum_is_clamped_and_paging_can_be_off(make_sim, org):
    name = busiest_user(org)
    body = audits(make_sim(max_limit=30), object_type="user", name=name, limit=500).json()
    assert body["count"] == 30
    unpaged = make_sim(paging=False)
    body = audits(unpaged, object_type="user", name=name, limit=5, offset=3).json()
    assert body["offset"] == 0
    assert body["count"] == len(unpaged.records_for("user", name)) > 25


def test_default_order_is_newest_first_and_sort_is_honoured(make_sim, org):
    sim = make_sim()
    name = busiest_user(org)
    oldest_first = [r["created_at"] for r in sim.records_for("user", name)]
    default = [
        r["created_at"] for r in audits(sim, object_type="user", name=name, limit=200).json()["audits"]
    ]
    assert default == sorted(oldest_first, reverse=True)[:200]
    asc = audits(sim, object_type="user", name=name, limit=5, sort="created_at ASC").json()["audits"]
    assert [r["created_at"] for r in asc] == oldest_first[:5]
    desc = audits(sim, object_type="user", name=name, limit=5, sort="created_at DESC").json()["audits"]
    assert [r["created_at"] for r in desc] == oldest_first[::-1][:5]
    unsorted = make_sim(honour_sort=False)
    ignored = audits(unsorted, object_type="user", name=name, limit=5, sort="created_at ASC").json()["audits"]
    assert [r["created_at"] for r in ignored] == default[:5]


def test_strict_mode_refuses_what_the_api_is_not_known_to_take(make_sim, org):
    name = busiest_user(org)
    lax = make_sim(honour_start_date=False, honour_sort=False)
    assert (
        audits(lax, object_type="user", name=name, page=2, start_date="2026-01-01T00:00:00Z").status_code
        == 200
    )
    strict = make_sim(strict_params=True, honour_start_date=False, honour_sort=False, max_limit=50)
    assert audits(strict, object_type="user", name=name, limit=50).status_code == 200
    for extra in (
        {"page": 2},
        {"start_date": "2026-01-01T00:00:00Z"},
        {"sort": "created_at ASC"},
        {"limit": 51},
    ):
        reply = audits(strict, object_type="user", name=name, **extra)
        assert reply.status_code == 400, extra
        assert reply.json()["code"] == 400 and reply.json()["error_description"]
    assert get(strict, USERS_PATH, page=1).status_code == 400


def test_the_unordered_style_returns_every_record_in_a_new_order_each_call(org, clock):
    user = org.users[0].email
    with Simulator.unordered(org, clock=clock) as sim:
        ask = dict(
            object_type="user",
            name=user,
            limit=5,
            offset=5,
            sort="created_at ASC",
            start_date=format_us(NOW_US),
        )
        first, second = (get(sim, AUDITS_PATH, **ask).json() for _ in range(2))
        assert isinstance(first, list) and len(first) == len(sim.records_for("user", user)) > 5
        assert first != second and sorted(map(str, first)) == sorted(map(str, second))
    with Simulator.unordered(org, time_bounds=True, clock=clock) as sim:
        mid = sim.records_for("user", user)[10]["created_at"]
        got = get(sim, AUDITS_PATH, object_type="user", name=user, start_date=mid, limit=200).json()
        assert got and all(r["created_at"] >= mid for r in got)


def test_a_service_that_ignores_offset_answers_the_first_page_again(make_sim, org):
    sim = make_sim(ignore_offset=True)
    name = busiest_user(org)
    first = audits(sim, object_type="user", name=name, limit=10, sort="created_at ASC").json()
    again = audits(sim, object_type="user", name=name, limit=10, offset=10, sort="created_at ASC").json()
    assert again["offset"] == 0 and again["audits"] == first["audits"]
    assert first["audits"] == sim.records_for("user", name)[:10]
