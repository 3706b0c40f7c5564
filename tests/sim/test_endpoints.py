"""The audits and users endpoints' query semantics, and what the simulator logs of requests."""

from __future__ import annotations

import collections

from forwarder.jsonutil import canonical
from forwarder.sim.endpoints import AUDITS_PATH
from forwarder.sim.entities import IDN_DOMAIN, ORG_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.org import domain_history_start_us
from forwarder.sim.simulator import DEMO_CLIENT_SECRET, Simulator
from forwarder.timeutil import format_us
from tests.sim.helpers import DAY_US, NOW_US, audits, busiest_user, get, token


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


def test_a_record_can_be_served_in_chosen_trails_only(make_sim):
    org = generate_org(12, NOW_US)
    sim = make_sim(org=org, paging=False)
    update = next(r for r in reversed(org.all_records()) if r["filterable_action"] == "domain.update")
    other = next(u.email for u in org.users if u.email.lower() != update["user"].lower())
    stray = {**update, "changes": {"n": 1}}
    sim.add_record_in(stray, ("user", other.upper()))

    def served(object_type, name):
        return audits(sim, object_type=object_type, name=name).json()["audits"]

    assert stray in served("user", other)
    assert stray not in served("user", update["user"]) and stray not in served("domain", update["object"])
    assert update in served("user", update["user"]) and update in served("domain", update["object"])


def test_bad_queries_are_400(make_sim):
    sim = make_sim()
    assert audits(sim, object_type="organization", name=ORG_DOMAIN).status_code == 400
    assert audits(sim, object_type="user").status_code == 400
    assert audits(sim, object_type="user", name="a@b", limit="ten").status_code == 400
    assert audits(sim, object_type="user", name="a@b", sort="name ASC").status_code == 400
    assert audits(sim, object_type="user", name="nobody@example.com").json()["audits"] == []


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


def test_request_log_holds_no_secrets(make_sim, org):
    sim = make_sim()
    bearer = token(sim).json()["access_token"]
    audits(sim, bearer, object_type="user", name=busiest_user(org), client_secret="leaked")
    assert sim.requests[0] == ("POST", sim.token_path, {})
    method, path, query = sim.requests[-1]
    assert (method, path, query["object_type"]) == ("GET", AUDITS_PATH, "user")
    assert query["client_secret"] == "<redacted>"
    assert bearer not in repr(sim.requests) and DEMO_CLIENT_SECRET not in repr(sim.requests)


def _ids(records):
    return sorted(canonical(r) for r in records)


def test_a_nameless_query_is_refused_unless_the_knob_serves_it(make_sim, org):
    since = format_us(NOW_US - 30 * DAY_US)
    refused = audits(make_sim(), object_type="user", start_date=since)
    assert refused.status_code == 400 and "name is required" in refused.text

    sim = make_sim(nameless="org-wide", paging=False)
    newer = [r for r in org.all_records() if r["created_at"] >= since]
    users = audits(sim, object_type="user", start_date=since, sort="created_at ASC").json()["audits"]
    assert _ids(users) == _ids(newer) and users == sorted(users, key=lambda r: r["created_at"])
    domains = audits(sim, object_type="domain", start_date=since).json()["audits"]
    assert _ids(domains) == _ids(r for r in newer if not r["filterable_action"].startswith("user."))
    assert {r["object"] for r in domains} > {ORG_DOMAIN}  # every domain's, not one


def test_a_nameless_query_pages_and_filters_like_a_named_one(make_sim, org):
    sim = make_sim(nameless="org-wide")
    oldest = format_us(domain_history_start_us(NOW_US))
    everything = [
        r
        for r in org.all_records()
        if r["filterable_action"].startswith("domain.update") and r["created_at"] >= oldest
    ]
    pages, offset = [], 0
    while True:
        query = {"filter": "domain.update", "sort": "created_at ASC", "limit": 20, "offset": offset}
        page = audits(sim, object_type="domain", **query).json()["audits"]
        pages.append(page)
        offset += len(page)
        if len(page) < 20:
            break
    served = [r for page in pages for r in page]
    assert len(pages) > 2 and _ids(served) == _ids(everything) and len(served) == len(everything)


def test_a_service_may_answer_a_nameless_query_wrongly(make_sim, org):
    first_user = org.users[0].email
    wrong = audits(make_sim(nameless="one-trail", paging=False), object_type="user").json()["audits"]
    assert wrong and _ids(wrong) == _ids(r for r in org.all_records() if r["user"] == first_user)
    assert audits(make_sim(nameless="empty"), object_type="user").json()["audits"] == []
