"""Name-less (org-wide) audits queries, probed over loopback against the simulator: used only where
the answer proves to be every trail's records, never where the service refuses the query, answers
nothing, answers one trail, or answers records of the other object type."""

from __future__ import annotations

import pytest

from forwarder import retry
from forwarder.api.client import AUDITS_PATH, ApiClient, Credentials
from forwarder.api.orgwide import changed_since, holders, probe_org_wide
from forwarder.records import event_id
from forwarder.sim.generate import generate_org, generate_wide_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.streams import Stream, plan_streams
from forwarder.timeutil import now_us, parse_iso
from tests.fakes import Waits

DAY_US = 86_400 * 1_000_000


@pytest.fixture(scope="module")
def org():
    org = generate_org(3)
    org.add_activity(40, now_us())
    return org


def _client(sim):
    policy = retry.RetryPolicy(sleep=Waits())  # its waits recorded, never slept
    return ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET), retry=policy)


def _streams(org):
    return plan_streams(("user", "domain"), [u.email for u in org.users], [d.name for d in org.domains], [])


def _newer(org, since_us, object_type):
    return [r for r in org.records_for(object_type, "", now_us()) if parse_iso(r["created_at"]) > since_us]


@pytest.mark.parametrize("object_type", ["user", "domain"])
def test_an_honoured_query_names_every_stream_with_newer_records(org, object_type):
    since = now_us() - 30 * DAY_US
    expected = _newer(org, since, object_type)
    assert len({r["user"] for r in expected}) > 2, "too few streams for the test to prove anything"
    with Simulator(org, nameless="org-wide") as sim:
        client = _client(sim)
        found = probe_org_wide(client, object_type, _streams(org), since_us=since, page_limit=200)
        assert found.honoured, found.finding
        assert found.line().startswith(f"org-wide {object_type}: honoured (")
        changes = changed_since(client, object_type, since, page_limit=7, max_pages=100)
    assert changes.complete and changes.stray == 0
    assert changes.calls == len(expected) // 7 + 1  # pages of 7 until a short one
    assert sorted(map(event_id, changes.records)) == sorted(map(event_id, expected))
    keys = {("user", r["user"].lower()) for r in expected}
    keys |= {("domain", r["object"]) for r in expected if not r["filterable_action"].startswith("user.")}
    assert set(changes.keys) == keys
    assert sum(n for (kind, _), n in changes.keys.items() if kind == "user") == len(expected)


def test_a_refused_query_is_not_honoured_and_leaves_the_stream_reads_alone(org):
    with Simulator(org) as sim:  # the default: 400 "name is required"
        client = _client(sim)
        found = probe_org_wide(client, "user", _streams(org), since_us=now_us() - DAY_US, page_limit=200)
        assert not found.honoured
        assert found.finding.startswith("not honoured (refused: GET /v1/cp/audits: HTTP 400")
        assert "name is required" in found.finding
        # The per-stream reads keep asking for an order and a start: the refusal is the query's.
        assert client.sends(AUDITS_PATH, "sort") and client.sends(AUDITS_PATH, "start_date")
        assert sim.calls(AUDITS_PATH) == 1


@pytest.mark.parametrize(
    ("nameless", "said"), [("one-trail", "names 1 streams but lacks"), ("empty", "is empty but lacks")]
)
def test_an_answer_missing_other_streams_records_is_not_honoured(org, nameless, said):
    since = now_us() - 30 * DAY_US
    with Simulator(org, nameless=nameless) as sim:
        found = probe_org_wide(_client(sim), "user", _streams(org), since_us=since, page_limit=200)
    assert not found.honoured and said in found.finding, found.finding


def test_one_active_stream_cannot_prove_an_org_wide_answer():
    org = generate_wide_org(10, 4)
    actor = org.users[7]
    for i in range(3):
        org.add_action(now_us() + i, actor, org.domains[i] if i else None)
    with Simulator(org, nameless="org-wide") as sim:
        found = probe_org_wide(
            _client(sim), "user", _streams(org), since_us=now_us() - DAY_US, page_limit=200
        )
    assert not found.honoured and found.finding.startswith("unproven (3 records of 1 streams since ")


def test_records_of_the_other_object_type_make_it_not_honoured(org):
    with Simulator(org, nameless="org-wide") as sim:
        sim.rewrite_next(1, b'"filterable_action":"domain.update"', b'"filterable_action":"user.update"')
        since = now_us() - 400 * DAY_US
        found = probe_org_wide(_client(sim), "domain", _streams(org), since_us=since, page_limit=200)
    assert not found.honoured
    # Every domain.update of that answer turned into a user action: none of them is a domain's.
    assert found.finding.startswith("not honoured (the answer holds ")
    assert found.finding.endswith(" records of no domain trail)")


def test_a_read_cut_by_the_page_cap_is_checked_over_the_span_it_covers(org):
    since = now_us() - 30 * DAY_US
    with Simulator(org, nameless="org-wide") as sim:
        client = _client(sim)
        changes = changed_since(client, "user", since, page_limit=5, max_pages=2)
        assert not changes.complete and changes.calls == 2 and len(changes.records) == 10
        found = probe_org_wide(client, "user", _streams(org), since_us=since, page_limit=5, max_pages=2)
    assert found.honoured and ", first 2 pages," in found.finding, found.finding


def test_a_service_ignoring_offset_ends_the_read_and_is_not_honoured(org):
    since = now_us() - 30 * DAY_US
    with Simulator(org, nameless="org-wide", ignore_offset=True) as sim:
        client = _client(sim)
        changes = changed_since(client, "user", since, page_limit=5, max_pages=50)
        assert changes.complete and changes.calls == 2 and len(changes.records) == 5
        found = probe_org_wide(client, "user", _streams(org), since_us=since, page_limit=5)
    assert not found.honoured and "lacks" in found.finding


def test_a_record_is_held_by_its_actors_stream_and_its_domains():
    dmarc = {"user": "A@x.example", "object": "xn--bcher-kva.example", "filterable_action": "domain.update"}
    assert holders(dmarc) == [("user", "a@x.example"), ("domain", "bücher.example")]
    role = {"user": "a@x.example", "object": "b@x.example", "filterable_action": "user.update_roles"}
    assert holders(role) == [("user", "a@x.example")]
    assert holders({"user": "", "object": "not a name", "filterable_action": "domain.update"}) == []
    assert holders("not a record") == []
    assert Stream("user", "A@x.example").key == "user/a@x.example"


def test_parameters_the_stream_reads_found_refused_are_not_sent(org):
    since = now_us() - 30 * DAY_US
    with Simulator(org, nameless="org-wide", strict_params=True, honour_sort=False) as sim:
        client = _client(sim)
        client.audits(Stream("user", org.users[0].email), {"sort": "created_at ASC"}, 200, 0)
        assert not client.sends(AUDITS_PATH, "sort")  # a 400 taught the client
        changes = changed_since(client, "user", since, page_limit=200, max_pages=50)
    assert sorted(map(event_id, changes.records)) == sorted(map(event_id, _newer(org, since, "user")))
