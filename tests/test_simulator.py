"""The API simulator, exercised over real loopback HTTP."""

from __future__ import annotations

import collections
import signal
import subprocess
import sys

import pytest
import requests

from forwarder.sim.endpoints import AUDITS_PATH, USERS_PATH
from forwarder.sim.entities import ADMIN_ROLES, DESTROYED_DOMAIN, IDN_DOMAIN, ORG_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.org import domain_history_start_us
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.timeutil import format_us, parse_duration, parse_iso

NOW_US = parse_iso("2026-03-01T12:00:00Z")
DAY_US = 86_400 * 1_000_000


class FakeClock:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self) -> float:
        return self.seconds


@pytest.fixture(scope="module")
def org():
    """Shared by tests that only read; tests that add activity generate their own."""
    return generate_org(7, NOW_US)


@pytest.fixture
def clock():
    return FakeClock(NOW_US / 1_000_000)


@pytest.fixture
def make_sim(org, clock):
    started = []

    def make(**knobs):
        knobs.setdefault("clock", clock)
        sim = Simulator(knobs.pop("org", org), **knobs)
        sim.start()
        started.append(sim)
        return sim

    yield make
    for sim in started:
        sim.stop()


def token(sim, **extra):
    form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET, **extra}
    return requests.post(sim.base_url + sim.token_path, data=form, timeout=5)


def get(sim, path, bearer=None, **params):
    bearer = bearer or token(sim).json()["access_token"]
    return requests.get(
        sim.base_url + path, params=params, headers={"Authorization": f"Bearer {bearer}"}, timeout=5
    )


def audits(sim, bearer=None, **params):
    return get(sim, AUDITS_PATH, bearer, **params)


def busiest_user(org):
    counts = collections.Counter(r["user"].lower() for r in org.all_records())
    return counts.most_common(1)[0][0]


def fetch_all(sim, name, object_type="user", limit=50, **params):
    bearer = token(sim).json()["access_token"]
    pages, offset = [], 0
    while True:
        body = audits(sim, bearer, object_type=object_type, name=name, limit=limit, offset=offset, **params)
        items = body.json()["audits"]
        pages.append(items)
        offset += len(items)
        if len(items) < limit:
            return pages


# -- token ------------------------------------------------------------------------------------------


def test_token_success_in_seconds_and_milliseconds(make_sim, clock):
    body = token(make_sim()).json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 14400
    assert body["created_at"] == int(clock.seconds)
    assert isinstance(body["access_token"], str) and len(body["access_token"]) >= 32
    assert token(make_sim(token_created_ms=True)).json()["created_at"] == int(clock.seconds * 1000)


def test_token_path_is_a_setting(make_sim):
    sim = make_sim(token_path="/v1/cp/oauth/token")
    assert token(sim, grant_type="client_credentials").status_code == 200
    default_path = requests.post(sim.base_url + "/v1/ep/token", data={"client_id": "x"}, timeout=5)
    assert default_path.status_code == 404


def test_wrong_credentials_get_401_without_echoing_the_secret(make_sim):
    sim = make_sim()
    reply = requests.post(
        sim.base_url + sim.token_path,
        data={"client_id": DEMO_CLIENT_ID, "client_secret": "wrong-secret-value"},
        timeout=5,
    )
    assert reply.status_code == 401
    body = reply.json()
    assert body["version"] == 1 and body["status"] == "error" and body["code"] == 401
    assert body["error"] == "Unauthorized" and body["error_description"]
    assert "wrong-secret-value" not in reply.text
    assert "wrong-secret-value" not in repr(sim.requests)


def test_token_request_must_be_form_encoded(make_sim):
    sim = make_sim()
    form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
    assert requests.post(sim.base_url + sim.token_path, json=form, timeout=5).status_code == 400
    assert token(sim, grant_type="password").status_code == 400


def test_missing_or_unknown_bearer_is_401(make_sim):
    sim = make_sim()
    no_header = requests.get(sim.base_url + USERS_PATH, timeout=5)
    assert no_header.status_code == 401 and no_header.json()["code"] == 401
    assert get(sim, USERS_PATH, bearer="not-a-token").status_code == 401


def test_tokens_expire_after_their_lifetime(make_sim, clock):
    sim = make_sim(token_lifetime=60)
    bearer = token(sim).json()["access_token"]
    clock.seconds += 59
    assert get(sim, USERS_PATH, bearer).status_code == 200
    clock.seconds += 1
    assert get(sim, USERS_PATH, bearer).status_code == 401
    assert get(sim, USERS_PATH).status_code == 200  # a fresh token works


def test_revoked_tokens_are_401(make_sim):
    sim = make_sim()
    bearer = token(sim).json()["access_token"]
    sim.revoke_tokens()
    assert get(sim, USERS_PATH, bearer).status_code == 401
    assert get(sim, USERS_PATH).status_code == 200


# -- response styles and paging ---------------------------------------------------------------------


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


# -- query semantics --------------------------------------------------------------------------------


def test_filter_is_a_prefix_match(make_sim, org):
    sim = make_sim(paging=False)
    actors = {r["user"] for r in org.all_records() if r["filterable_action"] == "user.update_roles"}
    actions = collections.Counter()
    for actor in actors:
        for record in audits(sim, object_type="user", name=actor, filter="user.update").json()["audits"]:
            actions[record["filterable_action"]] += 1
    assert set(actions) == {"user.update", "user.update_roles"}
    exact = audits(sim, object_type="domain", name=ORG_DOMAIN, filter="domain.update").json()["audits"]
    assert exact and {r["filterable_action"] for r in exact} == {"domain.update"}


def test_start_date_is_inclusive_and_can_be_ignored(make_sim, org):
    name = busiest_user(org)
    sim = make_sim(paging=False)
    trail = sim.records_for("user", name)
    pivot = trail[len(trail) // 2]["created_at"]
    body = audits(sim, object_type="user", name=name, start_date=pivot, sort="created_at ASC").json()
    assert body["audits"] == [r for r in trail if r["created_at"] >= pivot]
    assert body["audits"][0]["created_at"] == pivot
    second_precision = pivot[:19] + "Z"  # ISO 8601 without fraction, as integrations send it
    assert (
        audits(sim, object_type="user", name=name, start_date=second_precision).json()["count"]
        >= body["count"]
    )
    assert audits(sim, object_type="user", name=name, start_date="yesterday").status_code == 400
    ignoring = make_sim(paging=False, honour_start_date=False)
    assert audits(ignoring, object_type="user", name=name, start_date=pivot).json()["count"] == len(trail)


def test_user_name_is_case_insensitive_and_stored_emails_keep_their_capitals(make_sim, org):
    sim = make_sim(paging=False)
    shouting = [u.email for u in org.users if u.email != u.email.lower()]
    assert len(shouting) >= 2
    for email in shouting:
        upper = audits(sim, object_type="user", name=email).json()["audits"]
        lower = audits(sim, object_type="user", name=email.lower()).json()["audits"]
        assert upper == lower and upper
        assert {r["user"] for r in upper} == {email, email.lower()}  # the address changed case mid-trail


def test_domain_trail_reaches_back_13_months_only(make_sim, org):
    sim = make_sim(paging=False)
    oldest_kept = format_us(domain_history_start_us(NOW_US))
    on_domain = [r for r in org.all_records() if r["object"] == ORG_DOMAIN]
    older = [r for r in on_domain if r["created_at"] < oldest_kept]
    assert any(r["filterable_action"] == "domain.create" for r in older)
    trail = audits(sim, object_type="domain", name=ORG_DOMAIN).json()["audits"]
    assert trail and all(r["created_at"] >= oldest_kept for r in trail)
    assert len(trail) == len(on_domain) - len(older)
    # The user trail is not cut: the actor still sees the old domain.create.
    create = next(r for r in older if r["filterable_action"] == "domain.create")
    assert create in audits(sim, object_type="user", name=create["user"]).json()["audits"]


def test_idn_domain_answers_to_its_unicode_name_only(make_sim):
    sim = make_sim(paging=False)
    unicode_trail = audits(sim, object_type="domain", name=IDN_DOMAIN).json()["audits"]
    assert unicode_trail and {r["object"] for r in unicode_trail} == {IDN_DOMAIN}
    assert audits(sim, object_type="domain", name="xn--bcher-kva.example").json()["audits"] == []


def test_domain_records_appear_in_both_trails(make_sim, org):
    sim = make_sim(paging=False)
    update = next(r for r in reversed(org.all_records()) if r["filterable_action"] == "domain.update")
    assert update in audits(sim, object_type="domain", name=update["object"]).json()["audits"]
    assert update in audits(sim, object_type="user", name=update["user"]).json()["audits"]


def test_bad_queries_are_400(make_sim):
    sim = make_sim()
    assert audits(sim, object_type="organization", name=ORG_DOMAIN).status_code == 400
    assert audits(sim, object_type="user").status_code == 400
    assert audits(sim, object_type="user", name="a@b", limit="ten").status_code == 400
    assert audits(sim, object_type="user", name="a@b", sort="name ASC").status_code == 400
    assert audits(sim, object_type="user", name="nobody@example.com").json()["audits"] == []


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


# -- faults -----------------------------------------------------------------------------------------


def test_fail_next_with_retry_after_then_recovers(make_sim, org):
    sim = make_sim()
    bearer = token(sim).json()["access_token"]
    sim.fail_next(2, 503, retry_after=1.5)
    assert token(sim).status_code == 200  # other paths are untouched
    for _ in range(2):
        reply = audits(sim, bearer, object_type="user", name=busiest_user(org))
        assert reply.status_code == 503 and reply.headers["Retry-After"] == "1.5"
        assert reply.json()["code"] == 503
    assert audits(sim, bearer, object_type="user", name=busiest_user(org)).status_code == 200
    sim.fail_next(1, 429)
    reply = audits(sim, bearer, object_type="user", name=busiest_user(org))
    assert reply.status_code == 429 and "Retry-After" not in reply.headers


def test_fail_next_on_the_token_path(make_sim):
    sim = make_sim()
    sim.fail_next(1, 500, path_prefix=sim.token_path)
    assert token(sim).status_code == 500
    assert token(sim).status_code == 200


@pytest.mark.parametrize("style", ["envelope", "bare"])
def test_malformed_bodies(make_sim, org, style):
    sim = make_sim(style=style)
    bearer = token(sim).json()["access_token"]
    name = busiest_user(org)
    for kind in ("html", "truncated", "wrong-shape", "not-list-items"):
        sim.malform_next(1, kind)
    html = audits(sim, bearer, object_type="user", name=name)
    assert html.status_code == 200 and html.headers["Content-Type"].startswith("text/html")
    truncated = audits(sim, bearer, object_type="user", name=name)
    assert truncated.status_code == 200
    with pytest.raises(ValueError):
        truncated.json()
    wrong = audits(sim, bearer, object_type="user", name=name).json()
    assert isinstance(wrong, dict) and not any(isinstance(v, list) for v in wrong.values())
    strings = audits(sim, bearer, object_type="user", name=name).json()
    items = strings["audits"] if style == "envelope" else strings
    assert items and all(isinstance(i, str) for i in items)
    assert audits(sim, bearer, object_type="user", name=name).json()  # back to normal
    with pytest.raises(ValueError):
        sim.malform_next(1, "gibberish")


def test_request_log_holds_no_secrets(make_sim, org):
    sim = make_sim()
    bearer = token(sim).json()["access_token"]
    audits(sim, bearer, object_type="user", name=busiest_user(org), client_secret="leaked")
    assert sim.requests[0] == ("POST", sim.token_path, {})
    method, path, query = sim.requests[-1]
    assert (method, path, query["object_type"]) == ("GET", AUDITS_PATH, "user")
    assert query["client_secret"] == "<redacted>"
    assert bearer not in repr(sim.requests) and DEMO_CLIENT_SECRET not in repr(sim.requests)


def test_stopped_simulator_refuses_connections(org):
    sim = Simulator(org)
    with sim:
        session = requests.Session()
        assert session.post(sim.base_url + sim.token_path, data={}, timeout=5).status_code == 400
    with pytest.raises(requests.ConnectionError):
        session.post(sim.base_url + sim.token_path, data={}, timeout=5)


# -- the generated organization ---------------------------------------------------------------------


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


def test_added_activity_and_late_records_are_served(make_sim):
    org = generate_org(11, NOW_US)
    sim = make_sim(org=org, paging=False)
    later = NOW_US + DAY_US
    added = org.add_activity(30, later)
    assert len(added) == 30
    stamps = [r["created_at"] for r in added]
    assert min(stamps) >= format_us(later) and len(set(stamps)) < len(stamps)
    actor = added[0]["user"]
    served = audits(sim, object_type="user", name=actor, start_date=format_us(later)).json()["audits"]
    assert [r for r in added if r["user"].lower() == actor.lower()] == sorted(
        served, key=lambda r: r["created_at"]
    )
    late = org.add_late_record(NOW_US - 2 * DAY_US)
    assert late["created_at"] == format_us(NOW_US - 2 * DAY_US)
    assert late in audits(sim, object_type="user", name=late["user"]).json()["audits"]


# -- standalone -------------------------------------------------------------------------------------


def test_serve_prints_the_url_and_stops_on_ctrl_c():
    code = "import sys; from forwarder.sim.serve import serve; sys.exit(serve(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--port", "0", "--style", "bare"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = [proc.stdout.readline() for _ in range(4)]
        url = banner[1].strip().split("=", 1)[1]
        assert url.startswith("http://127.0.0.1:")
        assert f"FORWARDER_CLIENT_SECRET={DEMO_CLIENT_SECRET}" in banner[3]
        form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
        bearer = requests.post(url + "/v1/ep/token", data=form, timeout=5).json()["access_token"]
        users = requests.get(url + USERS_PATH, headers={"Authorization": f"Bearer {bearer}"}, timeout=5)
        assert isinstance(users.json(), list)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert err == ""  # no request logging


def test_a_deep_stream_pages_by_bisection_and_counts_calls(clock):
    org = generate_org(7, NOW_US)
    deep = "deep@" + ORG_DOMAIN
    org.add_deep_stream(deep, 5000, NOW_US)
    assert deep in [u["email"] for u in org.user_list()]
    with Simulator(org, clock=clock) as sim:
        trail = sim.records_for("user", deep)
        assert len(trail) == 5000 and len({r["created_at"] for r in trail}) < 5000  # some ties
        mid = trail[2500]["created_at"]
        body = get(
            sim, AUDITS_PATH, object_type="user", name=deep, start_date=mid, sort="created_at ASC", limit=200
        )
        assert body.json()["audits"][0]["created_at"] >= mid and body.json()["count"] == 200
        assert sim.calls() == 1 and sim.calls(name=deep) == 1 and sim.calls(name="x") == 0


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
