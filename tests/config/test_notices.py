"""Settings accepted but likely not meant: misspelt variables and filters that select nothing."""

from __future__ import annotations

from forwarder.config import load_settings
from forwarder.config.notices import unknown_variables, unmatched_filters
from tests.e2e.helpers import cli, env_for

BASE = {
    "FORWARDER_API_URL": "https://api.example.com",
    "FORWARDER_CLIENT_ID": "id",
    "FORWARDER_CLIENT_SECRET": "secret-value",
}


def test_misspelt_variables_are_named_with_the_setting_meant():
    found = unknown_variables(
        {"FORWARDER_DOMAIN": "a.example", "FORWARDER_SINK_TOKN": "x", "FORWARDER_FORAMT": "cef"}
    )
    assert found == [
        "FORWARDER_DOMAIN: not a setting of this forwarder, ignored; did you mean FORWARDER_DOMAINS?",
        "FORWARDER_FORAMT: not a setting of this forwarder, ignored; did you mean FORWARDER_FORMAT?",
        "FORWARDER_SINK_TOKN: not a setting of this forwarder, ignored; did you mean FORWARDER_SINK_TOKEN?",
    ]


def test_known_and_foreign_variables_are_left_alone():
    assert unknown_variables({"FORWARDER_DOMAINS": "a.example", "HOME": "/root", "PATH": "/bin"}) == []
    far = unknown_variables({"FORWARDER_" + "Q" * 5000: "1"})
    assert len(far) == 1 and len(far[0]) < 200 and "configuration table" in far[0]


def test_a_filter_selecting_no_known_action_is_told_with_the_closest():
    assert unmatched_filters(["user.logins"]) == [
        "FORWARDER_FILTERS: 'user.logins' selects none of the known actions; did you mean user.login?"
    ]
    assert unmatched_filters(["user.login", "domain.", "user.update", "dkim_record_source."]) == []


def test_settings_carry_the_notices_and_a_clean_environment_has_none():
    assert load_settings(BASE).notices == ()
    notices = load_settings({**BASE, "FORWARDER_FORAMT": "cef", "FORWARDER_FILTERS": "user.logins"}).notices
    assert [n.split(":")[0] for n in notices] == ["FORWARDER_FORAMT", "FORWARDER_FILTERS"]


def test_check_and_run_warn_about_a_misspelt_variable(tmp_path):
    from forwarder.sim.generate import generate_org
    from forwarder.sim.simulator import Simulator

    with Simulator(generate_org(2)) as sim:
        env = {
            **env_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "s")),
            "FORWARDER_FORAMT": "cef",
        }
        checked = cli("check", env=env)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "warn configuration: FORWARDER_FORAMT: not a setting" in checked.stdout
        assert "did you mean FORWARDER_FORMAT?" in checked.stdout
        ran = cli("run", env=env)
        assert ran.returncode == 0 and "did you mean FORWARDER_FORMAT?" in ran.stderr
