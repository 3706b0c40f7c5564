"""The modular input run in this process (handlers/splunk_input.py) against the fake splunkd: the
platform API goes through the Proxy page's proxy, given to the API client as an argument, and the
process environment is the same after a run as before it. (Run as splunkd runs it, in a process of
its own: test_protocol.py.)"""

from __future__ import annotations

import io
import json
import logging
import os

import pytest
from splunklib.modularinput import EventWriter

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from handlers.splunk_input import run_input
from handlers.splunk_settings import COLLECTION, SETTINGS_CONF
from tests.receivers.forward_proxy import ForwardProxy, behind

from .conftest import APP
from .fake_splunkd import SESSION_KEY, FakeSplunkd
from .test_protocol import add_account, params

ORG = generate_org(3)


@pytest.fixture
def splunkd(tmp_path_factory):
    with FakeSplunkd(APP, tmp_path_factory.mktemp("certs")) as fake:
        fake.confs[SETTINGS_CONF] = {"logging": {"loglevel": "INFO"}, "proxy": {"proxy_enabled": "0"}}
        fake.collections[COLLECTION] = {}
        yield fake


@pytest.fixture
def logging_kept(monkeypatch, tmp_path):
    """The input logs to a file under $SPLUNK_HOME, closed after the test (the root logger itself is
    put back by tests/conftest.py)."""
    monkeypatch.setenv("SPLUNK_HOME", str(tmp_path / "splunk"))
    before = list(logging.getLogger().handlers)
    yield
    for handler in logging.getLogger().handlers:
        if handler not in before:
            handler.close()


def run(splunkd: FakeSplunkd, tmp_path) -> list:
    """One run of input ``prod_users``; the audit events it wrote."""
    out = io.StringIO()
    meta = {
        "server_uri": splunkd.url,
        "session_key": SESSION_KEY,
        "checkpoint_dir": str(tmp_path / "modinputs"),
    }
    run_input(meta, "emailauth_audit://prod_users", "prod_users", params(), EventWriter(out, io.StringIO()))
    return [
        e for e in out.getvalue().split("<data>")[1:] if '"dataset":"emailauth.audit"' in e.replace(" ", "")
    ]


@pytest.mark.usefixtures("logging_kept")
def test_the_api_goes_through_the_proxy_page_and_the_environment_is_left_as_it_was(splunkd, tmp_path):
    with Simulator(ORG) as sim, ForwardProxy() as proxy:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        splunkd.confs[SETTINGS_CONF]["proxy"] = {
            "proxy_enabled": "1",
            "proxy_url": "127.0.0.1",
            "proxy_port": proxy.url.rsplit(":", 1)[1],
        }
        before = dict(os.environ)
        events = run(splunkd, tmp_path)
        assert dict(os.environ) == before
    assert len(events) == len(ORG.all_records())
    assert f"POST {sim.base_url}/v1/ep/token" in proxy.relayed
    assert any("/audits" in line for line in proxy.relayed)
    assert not [line for line in proxy.relayed if "servicesNS" in line]  # splunkd never through it


@pytest.mark.usefixtures("logging_kept")
def test_with_the_proxy_page_off_the_api_is_reached_directly_whatever_splunkds_environment_says(
    splunkd, tmp_path, monkeypatch
):
    with Simulator(ORG) as sim, ForwardProxy() as proxy:
        add_account(splunkd, "prod", sim.base_url, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
        behind(monkeypatch, proxy.url)
        before = dict(os.environ)
        events = run(splunkd, tmp_path)
        assert dict(os.environ) == before
    assert len(events) == len(ORG.all_records())
    api = sim.base_url.split("//")[1]
    assert not [line for line in proxy.relayed if api in line]  # (solnlib's calls to splunkd: its own)
    state = splunkd.collections[COLLECTION]
    assert state and {r["scope"] for r in state.values()} == {"c1"}
    assert all(json.dumps(r).find(SESSION_KEY) < 0 for r in state.values())
