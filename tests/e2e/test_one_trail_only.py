"""Records that one stream returns although another planned stream is their natural home (DESIGN §2,
Overlap), served by the simulator over loopback: whichever stream returns a record delivers it, once,
whether or not the other trail holds it too."""

from __future__ import annotations

from typing import Any, Dict

from forwarder.app import run_once
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
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
