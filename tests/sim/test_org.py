"""Activity added to an organization while it is served, and the scope of a name-less query."""

from __future__ import annotations

from forwarder.sim.generate import generate_wide_org
from tests.sim.helpers import NOW_US


def test_an_action_is_a_login_or_a_dmarc_change_in_the_actor_and_domain_trails():
    org = generate_wide_org(8, 4, now_us=NOW_US)
    actor, domain = org.users[5], org.domains[2]
    login = org.add_action(NOW_US + 1, actor)
    change = org.add_action(NOW_US + 2, actor, domain)
    assert (login["filterable_action"], login["user"], login["object"]) == (
        "user.login",
        actor.email,
        actor.email,
    )
    assert (change["action"], change["user"], change["object"]) == (
        "DMARC Record Updated",
        actor.email,
        domain.name,
    )
    assert org.records_for("user", actor.email, NOW_US, start="2000")[-2:] == [login, change]
    assert org.records_for("domain", domain.name, NOW_US)[-1] == change
    before, after = change["changes"]["dmarc_txt_record"]
    assert before != after


def test_an_empty_name_scopes_every_user_or_every_domain():
    org = generate_wide_org(8, 4, now_us=NOW_US)
    org.add_action(NOW_US + 1, org.users[6], org.domains[3])
    everything = org.all_records()
    assert org.records_for("user", "", NOW_US) == everything
    domains = [r for r in everything if not r["filterable_action"].startswith("user.")]
    assert org.records_for("domain", "", NOW_US) == domains and len(domains) == 5
