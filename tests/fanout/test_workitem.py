"""Work items: shards of a tenant's plan that carry the whole plan, through a message body."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forwarder.fanout.workitem import WorkItem, shard_plan
from forwarder.streams import plan_streams

USERS = [f"user{n}@acme.example" for n in range(7)]
DOMAINS = ["acme.example", "bücher.example"]


def test_shards_cover_the_plan_once_in_order_and_rebuild_the_whole_plan():
    plan = plan_streams(("user", "domain"), USERS, DOMAINS, ())
    items = shard_plan("acme", "c1", plan, 4)
    assert [i.shard for i in items] == [0, 1, 2]
    assert [k for i in items for k in i.streams] == [s.key for s in plan]
    for item in items:
        back = WorkItem.from_body(item.to_body())
        assert back == item
        full, shard = back.plan(("user", "domain"), ())
        assert full == plan  # the whole plan, as a single run builds it
        assert [s.key for s in shard] == list(item.streams)


@given(
    st.lists(st.from_regex(r"[a-zA-Z0-9.é]{1,8}@[a-z]{1,6}\.example", fullmatch=True), max_size=40),
    st.integers(min_value=1, max_value=50),
)
def test_any_plan_in_any_shard_size_round_trips(users, size):
    plan = plan_streams(("user",), users, (), ())
    items = shard_plan("t", "c", plan, size)
    assert sum(len(i.streams) for i in items) == len(plan)
    assert all(len(i.streams) <= size for i in items)
    for item in items:
        assert WorkItem.from_body(item.to_body()).plan(("user",), ())[0] == plan


def test_a_remainder_keeps_tenant_shard_and_cycle_and_gets_its_own_id():
    [item] = shard_plan("acme", "c1", plan_streams(("user",), USERS, (), ()), 10)
    rest = item.rest(item.streams[3:])
    assert (rest.tenant, rest.cycle, rest.shard, rest.part) == ("acme", "c1", 0, 1)
    assert rest.id != item.id and rest.rest(rest.streams[1:]).id != rest.id
    assert WorkItem.from_body(item.to_body()).id == item.id  # stable over redeliveries


def test_a_stream_gone_from_the_settings_is_left_out():
    [item] = shard_plan("acme", "c1", plan_streams(("user", "domain"), USERS, DOMAINS, ()), 20)
    full, shard = item.plan(("user",), ())  # domains no longer pulled
    assert all(s.object_type == "user" for s in full + shard) and len(shard) == len(USERS)


@pytest.mark.parametrize(
    "body,problem",
    [
        ("<html>", "not JSON"),
        ("[]", "schema-1 work item"),
        (json.dumps({"schema": 1, "tenant": "a"}), "no 'streams'"),
        (
            json.dumps(
                {
                    "schema": 1,
                    "tenant": "a",
                    "cycle": "c",
                    "shard": 0,
                    "part": 0,
                    "streams": [],
                    "users": "!!",
                    "domains": "",
                }
            ),
            "corrupt",
        ),
        (json.dumps({"schema": 1, "tenant": 1, "cycle": "c", "shard": 0, "part": 0, "streams": []}), "text"),
    ],
)
def test_a_body_that_is_not_a_work_item_says_why(body, problem):
    with pytest.raises(ValueError, match=problem):
        WorkItem.from_body(body)


def test_an_item_over_the_message_limit_is_refused_naming_the_tenant():
    users = [f"{n:08x}{n * 7919 % 10007:05d}@tenant{n}.example" for n in range(60_000)]
    [item] = shard_plan("huge", "c", plan_streams(("user",), users[:1], (), ()), 10)
    big = WorkItem(item.tenant, item.cycle, 0, item.streams, tuple(users), ())
    with pytest.raises(ValueError, match="tenant 'huge': a work item is over SQS's 256 KB"):
        big.to_body()
