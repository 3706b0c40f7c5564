"""Records that one stream returns although another planned stream is their natural home (DESIGN §2,
Overlap), served by the simulator over loopback: whichever stream returns a record delivers it, once,
whether or not the other trail holds it too."""

from __future__ import annotations

import functools
from typing import Any, Dict

from forwarder.app import run_once
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.state.local import LocalStore
from forwarder.timeutil import format_us, now_us
from tests.e2e.helpers import HEC_TOKEN, canonical_id, quiet_users, settings_for
from tests.receivers.hec import HecReceiver


def audit(action: str, actor: str, obj: str, n: int) -> Dict[str, Any]:
    return {
        "action": action,
        "filterable_action": action,
        "user": actor,
        "object": obj,
        "changes": {"n": n},
        "created_at": format_us(now_us() - (60 - n) * 1_000_000),
    }


def test_a_record_in_one_trail_only_is_delivered_once_by_the_stream_that_returns_it(tmp_path):
    org = generate_org(5)
    alice, bob = quiet_users(org, 2)
    domain = org.domains[0].name
    # Bob's login served in Alice's trail only; a DMARC change of Alice's served in her user trail
    # only (its domain's trail lacks it); one in the domain's trail only; and one in both trails.
    strays = [
        audit("user.login", bob, bob, 1),
        audit("domain.update", alice, domain, 2),
    ]
    for record in strays:
        org.add_record_in(record, [("user", alice)])
    in_domain_only = org.add_record_in(audit("domain.update", alice, domain, 3), [("domain", domain)])
    both = org.add_record_in(audit("domain.update", bob, domain, 4), [("user", bob), ("domain", domain)])
    wanted = {canonical_id(r) for r in [*strays, in_domain_only, both]}

    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(
            sim.base_url,
            hec.url,
            str(tmp_path / "state"),
            FORWARDER_USERS=f"{alice},{bob}",
            FORWARDER_DOMAINS=domain,
            FORWARDER_INITIAL_LOOKBACK="1h",
        )
        first = run_once(settings)
        assert first.ok, first.to_dict()
        delivered = [i for i in hec.event_ids() if i in wanted]
        assert sorted(delivered) == sorted(wanted), "a record served in one trail only was lost"
        # The user stream, polled first, shipped the DMARC change it returned: the domain stream
        # found it delivered and skipped it.
        by_stream = {s.stream: s.shipped for s in first.streams}
        assert by_stream[f"user/{alice.lower()}"] >= 2

        again = run_once(settings)
        assert again.ok and again.totals()["shipped"] == 0
        assert sorted(i for i in hec.event_ids() if i in wanted) == sorted(wanted)


def test_a_domain_record_is_shipped_by_the_user_stream_polled_first_and_the_domain_stream_records_it(
    tmp_path,
):
    org = generate_org(5)
    (alice,) = quiet_users(org, 1)
    domain = org.domains[0].name
    change = org.add_record_in(
        audit("domain.update", alice, domain, 1), [("user", alice), ("domain", domain)]
    )
    state = tmp_path / "state"
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        settings = settings_for(
            sim.base_url,
            hec.url,
            str(state),
            FORWARDER_USERS=alice,
            FORWARDER_DOMAINS=domain,
            FORWARDER_INITIAL_LOOKBACK="1h",
            FORWARDER_CONCURRENCY="1",
        )
        user_first = functools.partial(sorted, key=lambda s: s.object_type != "user")
        report = run_once(settings, order=user_first)
        assert report.ok and hec.event_ids().count(canonical_id(change)) == 1
        user, domain_stream = report.streams
        assert user.stream.startswith("user/") and user.shipped == 1
        assert domain_stream.shipped == 0 and domain_stream.skipped == 1
        # The domain stream's state took the copy in the same run: the next poll is idle for it.
        assert canonical_id(change) in LocalStore(str(state)).load(domain_stream.stream).state.seen
        files = {p.name: p.stat().st_mtime_ns for p in state.iterdir()}
        again = run_once(settings, order=user_first)
        assert again.ok and again.totals()["shipped"] == 0 and again.streams[1].skipped == 1
        assert {p.name: p.stat().st_mtime_ns for p in state.iterdir()} == files


def test_a_corrupt_delivered_ids_index_stops_the_run_and_names_it(tmp_path):
    org = generate_org(5)
    state = tmp_path / "state"
    state.mkdir()
    index = state / ".delivered-ids"
    index.write_text('{"schema": 1, "count": 3, "ids": "AAAA", "revision": "r1"}')
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        report = run_once(
            settings_for(sim.base_url, hec.url, str(state), FORWARDER_USERS=quiet_users(org, 1)[0])
        )
        assert not report.ok and str(index) in (report.error or "") and "corrupt" in report.error
        assert hec.event_ids() == [] and not list(state.glob("*.json"))  # no stream state written
