"""The packaged modular input, run as splunkd runs it (scheme, validation, streaming runs) against
the fake splunkd over HTTPS: the account and settings through solnlib, state in its KV store."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.timeutil import now_us
from handlers.splunk_hooks import drop_checkpoint
from handlers.splunk_settings import ACCOUNT_CONF, COLLECTION, SETTINGS_CONF
from tests.e2e.helpers import canonical_id
from tests.receivers.forward_proxy import ForwardProxy

from .conftest import APP, PY39, PYTHONS, input_xml, run_script, validation_xml
from .fake_splunkd import SESSION_KEY, FakeSplunkd, account_password

ARGUMENTS = {  # interval and index are every input's own settings, not arguments
    "name",
    "account",
    "object_types",
    "users",
    "domains",
    "filters",
    "initial_lookback",
    "event_format",
    "checkpoint_id",
}


def add_account(fake: FakeSplunkd, name: str, api_url: str, client_id: str, secret: str) -> None:
    """What saving Configuration > Accounts leaves behind: the stanza, its secret encrypted."""
    fake.confs.setdefault(ACCOUNT_CONF, {})[name] = {
        "api_url": api_url,
        "client_id": client_id,
        "client_secret": "******",
        "token_path": "/v1/ep/token",
    }
    account_password(fake, ACCOUNT_CONF, name, secret)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return tmp_path_factory.mktemp("certs")


@pytest.fixture
def splunkd(certs):
    with FakeSplunkd(APP, certs) as fake:
        fake.confs[SETTINGS_CONF] = {"logging": {"loglevel": "INFO"}, "proxy": {"proxy_enabled": "0"}}
        fake.collections[COLLECTION] = {}
        yield fake


def params(account: str = "prod", **change: str) -> dict:
    return {
        "account": account,
        "object_types": "user",
        "initial_lookback": "800d",
        "checkpoint_id": "c1",
        **change,
    }


def streamed(stdout: str) -> list:
    """Parse splunkd's view of the output: one <stream> of <event> elements."""
    if not stdout.strip():
        return []
    root = ET.fromstring(stdout)
    assert root.tag == "stream"
    return [{child.tag: child.text for child in event} | {"stanza": event.get("stanza")} for event in root]


def audit_ids(stdout: str, sourcetype: str = "emailauth:audit") -> list:
    return sorted(
        json.loads(e["data"])["event"]["id"] for e in streamed(stdout) if e["sourcetype"] == sourcetype
    )


@pytest.mark.parametrize("python", PYTHONS)
def test_scheme_is_the_one_ucc_generated_from_global_config(app_dir, python):
    done = run_script(app_dir, python, ["--scheme"])
    assert done.returncode == 0, done.stderr
    root = ET.fromstring(done.stdout)
    assert root.findtext("use_external_validation") == "true"
    assert root.findtext("use_single_instance") == "false"
    args = {arg.get("name"): arg for arg in root.iter("arg")}
    assert set(args) == ARGUMENTS
    assert args["account"].findtext("required_on_create") == "true"


def test_validation_accepts_good_values(app_dir, splunkd, tmp_path):
    add_account(splunkd, "prod", "https://api.example.com", DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
    xml = validation_xml(splunkd.url, SESSION_KEY, tmp_path, "prod_users", params())
    done = run_script(app_dir, PY39, ["--validate-arguments"], xml)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"object_types": "user,mailbox"}, "object_types: choose from user, domain"),
        ({"users": "not-an-email"}, "users: 'not-an-email' is not an email address"),
        ({"initial_lookback": "fortnight"}, "initial_lookback:"),
        ({"event_format": "xml"}, "event_format:"),
        ({"account": "nosuch"}, "account 'nosuch' does not exist: add it on Configuration > Accounts"),
    ],
)
def test_validation_rejects_bad_values_with_a_clear_message(app_dir, splunkd, tmp_path, change, message):
    add_account(splunkd, "prod", "https://api.example.com", DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
    xml = validation_xml(splunkd.url, SESSION_KEY, tmp_path, "prod_users", params(**change))
    done = run_script(app_dir, PY39, ["--validate-arguments"], xml)
    assert done.returncode == 1
    text = ET.fromstring(done.stdout).findtext("message")
    assert message in text
    assert "FORWARDER_" not in text  # problems name the input's fields


@pytest.mark.parametrize("python", PYTHONS)
def test_runs_stream_events_keep_state_in_the_kv_store_and_lose_nothing_across_restarts(
    app_dir, splunkd, tmp_path, python
):
    org = generate_org(5)
    home = tmp_path / "splunk"
    with Simulator(org) as sim:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        xml = input_xml(splunkd.url, SESSION_KEY, tmp_path / "modinputs", "prod_users", params(index="audit"))
        first = run_script(app_dir, python, [], xml, splunk_home=home)
        assert first.returncode == 0, first.stderr
        events = streamed(first.stdout)
        audit = [e for e in events if e["sourcetype"] == "emailauth:audit"]
        assert audit_ids(first.stdout) == sorted(canonical_id(r) for r in org.all_records())
        for event in audit:
            doc = json.loads(event["data"])
            assert event["stanza"] == "emailauth_audit://prod_users" and event["index"] == "audit"
            assert event["time"].split(".")[1] == doc["@timestamp"][20:23]  # the event's time, to the ms
        health = [json.loads(e["data"]) for e in events if e["sourcetype"] == "emailauth:audit:health"]
        assert len(health) == 1 and health[0]["event"]["dataset"] == "emailauth.forwarder.health"
        run = health[0]["emailauth"]["forwarder"]
        assert run["status"] == "success" and run["records"]["shipped"] == len(audit)
        assert run["runtime"] == "splunk" and run["tenant"] == "prod_users"
        assert {r["scope"] for r in splunkd.collections[COLLECTION].values()} == {"c1"}

        # A new process (a restart) reads the state back from the KV store: only what is new.
        added = org.add_activity(7, now_us())
        second = run_script(app_dir, python, [], xml, splunk_home=home)
        assert second.returncode == 0, second.stderr
        assert audit_ids(second.stdout) == sorted(canonical_id(r) for r in added)
        assert audit_ids(run_script(app_dir, python, [], xml, splunk_home=home).stdout) == []

    log_text = (home / "var" / "log" / "splunk" / "ta_fortra_emailauth.log").read_text()
    assert '"input": "prod_users"' in log_text and "run finished" in log_text
    for text in (log_text, first.stdout, first.stderr, second.stderr):
        assert DEMO_CLIENT_SECRET not in text and SESSION_KEY not in text
    assert any(r.startswith("GET /servicesNS/nobody/") and "/configs/conf-" in r for r in splunkd.requests)
    # nothing but the endpoints the fake models (a call it does not know would be answered 404)
    known = (
        "/storage/passwords",
        "/properties/",
        "/configs/conf-",
        f"/storage/collections/data/{COLLECTION}",
    )
    assert [r for r in splunkd.requests if not any(k in r for k in known)] == []


def test_two_inputs_on_one_account_keep_separate_state(app_dir, splunkd, tmp_path):
    org = generate_org(5)
    everything = sorted(canonical_id(r) for r in org.all_records())
    with Simulator(org) as sim:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        one = input_xml(splunkd.url, SESSION_KEY, tmp_path, "one", params(checkpoint_id="u1"))
        two = input_xml(splunkd.url, SESSION_KEY, tmp_path, "two", params(checkpoint_id="u2"))
        assert audit_ids(run_script(app_dir, PY39, [], one).stdout) == everything
        assert audit_ids(run_script(app_dir, PY39, [], two).stdout) == everything  # not "already sent"
        assert audit_ids(run_script(app_dir, PY39, [], one).stdout) == []
    assert {r["scope"] for r in splunkd.collections[COLLECTION].values()} == {"u1", "u2"}


def test_a_deleted_input_leaves_no_state_and_a_new_one_of_that_name_starts_afresh(app_dir, splunkd, tmp_path):
    org = generate_org(5)
    with Simulator(org) as sim:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        old = input_xml(splunkd.url, SESSION_KEY, tmp_path, "prod_users", params(checkpoint_id="old"))
        assert audit_ids(run_script(app_dir, PY39, [], old).stdout)
        drop_checkpoint(splunkd.url, SESSION_KEY, "old")  # what the input's REST handler does on delete
        assert splunkd.collections[COLLECTION] == {}
        new = input_xml(splunkd.url, SESSION_KEY, tmp_path, "prod_users", params(checkpoint_id="new"))
        assert len(audit_ids(run_script(app_dir, PY39, [], new).stdout)) == len(org.all_records())


def test_pointing_an_input_at_another_tenant_starts_afresh(app_dir, splunkd, tmp_path):
    org = generate_org(5)
    with Simulator(org) as sim, Simulator(org, client_id="other", client_secret="other-secret-1") as other:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        add_account(splunkd, "eu", other.base_url, "other", "other-secret-1")
        first = input_xml(splunkd.url, SESSION_KEY, tmp_path, "audit", params())
        assert run_script(app_dir, PY39, [], first).returncode == 0
        moved = input_xml(splunkd.url, SESSION_KEY, tmp_path, "audit", params(account="eu"))
        assert len(audit_ids(run_script(app_dir, PY39, [], moved).stdout)) == len(org.all_records())


def test_event_format_sets_the_sourcetype(app_dir, splunkd, tmp_path):
    with Simulator(generate_org(3)) as sim:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        xml = input_xml(splunkd.url, SESSION_KEY, tmp_path, "ocsf", params(event_format="ocsf"))
        events = streamed(run_script(app_dir, PY39, [], xml).stdout)
    kinds = {e["sourcetype"] for e in events}
    assert kinds == {"emailauth:audit:ocsf", "emailauth:audit:ocsf:health"}
    assert all(
        "class_uid" in json.loads(e["data"]) for e in events if e["sourcetype"] == "emailauth:audit:ocsf"
    )


def test_the_log_level_comes_from_the_logging_tab(app_dir, splunkd, tmp_path):
    splunkd.confs[SETTINGS_CONF]["logging"]["loglevel"] = "DEBUG"
    home = tmp_path / "splunk"
    with Simulator(generate_org(3)) as sim:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        xml = input_xml(splunkd.url, SESSION_KEY, tmp_path, "prod_users", params())
        assert run_script(app_dir, PY39, [], xml, splunk_home=home).returncode == 0
    lines = [
        json.loads(line)
        for line in (home / "var/log/splunk/ta_fortra_emailauth.log").read_text().splitlines()
    ]
    assert "DEBUG" in {line["level"] for line in lines}


def test_a_missing_account_is_reported_to_splunkd_and_streams_nothing(app_dir, splunkd, tmp_path):
    xml = input_xml(splunkd.url, SESSION_KEY, tmp_path, "prod_users", params(account="gone"))
    done = run_script(app_dir, PY39, [], xml)
    assert "<event" not in done.stdout
    assert "ERROR" in done.stderr and "account 'gone' does not exist" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_kv_store_that_refuses_the_session_fails_the_run_with_a_clear_message(app_dir, splunkd, tmp_path):
    del splunkd.collections[COLLECTION]
    with Simulator(generate_org(3)) as sim:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        xml = input_xml(splunkd.url, SESSION_KEY, tmp_path, "prod_users", params())
        done = run_script(app_dir, PY39, [], xml)
    assert 'emailauth:audit"' not in done.stdout and audit_ids(done.stdout) == []
    assert f"KV store collection {COLLECTION} does not exist" in done.stderr


def test_the_platform_api_goes_through_the_proxy_tab_and_splunkd_does_not(app_dir, splunkd, tmp_path):
    org = generate_org(3)
    with Simulator(org) as sim, ForwardProxy() as proxy:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        port = proxy.url.rsplit(":", 1)[1]
        splunkd.confs[SETTINGS_CONF]["proxy"] = {
            "proxy_enabled": "1",
            "proxy_url": "127.0.0.1",
            "proxy_port": port,
        }
        xml = input_xml(splunkd.url, SESSION_KEY, tmp_path, "prod_users", params())
        done = run_script(app_dir, PY39, [], xml)
    assert len(audit_ids(done.stdout)) == len(org.all_records()), done.stderr
    assert f"POST {sim.base_url}/v1/ep/token" in proxy.relayed
    assert any("/audits" in line for line in proxy.relayed)
    assert not [line for line in proxy.relayed if "servicesNS" in line]
