"""Saving an account asks the platform for a token (through the proxy), and the settings solnlib
reads (account secret, proxy with its password) come back decrypted from the fake splunkd."""

from __future__ import annotations

import json

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from handlers.splunk_hooks import AccountRejected, check_account
from handlers.splunk_settings import ACCOUNT_CONF, SETTINGS_CONF, SettingsError, SplunkdSettings, proxy_url
from tests.receivers.forward_proxy import ForwardProxy

from .conftest import APP
from .fake_splunkd import SESSION_KEY, FakeSplunkd, account_password


@pytest.fixture(scope="module")
def sim():
    with Simulator(generate_org(3)) as simulator:
        yield simulator


def fields(sim, **change):
    return {
        "api_url": sim.base_url,
        "client_id": DEMO_CLIENT_ID,
        "client_secret": DEMO_CLIENT_SECRET,
        **change,
    }


def test_a_working_account_passes(sim):
    check_account(fields(sim), None)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"client_secret": "wrong-secret-123"}, "refused this client id and secret (HTTP 401): check both"),
        ({"token_path": "/nope"}, "no token endpoint at /nope (HTTP 404); check the URL and token path"),
        ({"api_url": "http://api.example.com"}, "API base URL: must use https://"),
        (
            {"api_url": "http://127.0.0.1:9"},
            "no token from http://127.0.0.1:9: the token endpoint http://127.0.0.1:9/v1/ep/token: "
            "127.0.0.1:9 refused the connection (nothing listens on that port) after 2 attempts; check the "
            "host and port in the URL, and that the service runs",
        ),
    ],
)
def test_a_broken_account_is_refused_with_a_clear_message(sim, change, message):
    with pytest.raises(AccountRejected) as err:
        check_account(fields(sim, **change), None)
    assert message in str(err.value)
    assert "wrong-secret-123" not in str(err.value) and "FORWARDER_" not in str(err.value)


def test_the_check_goes_through_the_configured_proxy(sim):
    with ForwardProxy() as proxy:
        check_account(fields(sim), proxy.url)
    assert proxy.relayed == [f"POST {sim.base_url}/v1/ep/token"]


def test_a_dead_proxy_is_named_in_the_message(sim):
    with pytest.raises(AccountRejected, match=r"the proxy to 127.0.0.1:\d+ refused the conn"):
        check_account(fields(sim), "http://127.0.0.1:9")


@pytest.mark.parametrize(
    ("proxy", "url"),
    [
        ({"proxy_enabled": "0", "proxy_url": "p.example", "proxy_port": "3128"}, None),
        ({"proxy_enabled": "1", "proxy_type": "http", "proxy_url": "p.example", "proxy_port": "3128"}, "http://p.example:3128"),
        (
            {"proxy_enabled": "true", "proxy_type": "http", "proxy_url": "p", "proxy_port": "8080",
             "proxy_username": "me@corp", "proxy_password": "p:w/d"},
            "http://me%40corp:p%3Aw%2Fd@p:8080",
        ),
        (
            {"proxy_enabled": "1", "proxy_type": "socks5", "proxy_url": "s", "proxy_port": "1080",
             "proxy_rdns": "1"},
            "socks5h://s:1080",
        ),
        ({"proxy_enabled": "1", "proxy_type": "socks4", "proxy_url": "s", "proxy_port": "1080"}, "socks4://s:1080"),
    ],
)  # fmt: skip
def test_proxy_settings_become_a_requests_proxy_url(proxy, url):
    assert proxy_url(proxy) == url


def test_an_enabled_proxy_without_a_port_is_a_settings_error():
    with pytest.raises(SettingsError, match="Configuration > Proxy"):
        proxy_url({"proxy_enabled": "1", "proxy_url": "p.example", "proxy_port": ""})


def test_solnlib_reads_the_encrypted_fields_back(tmp_path):
    with FakeSplunkd(APP, tmp_path) as splunkd:
        splunkd.confs[ACCOUNT_CONF] = {
            "eu": {"api_url": "https://api.agari-eu.com", "client_id": "cid", "client_secret": "******"}
        }
        account_password(splunkd, ACCOUNT_CONF, "eu", "s3cret-value")
        splunkd.confs[SETTINGS_CONF] = {
            "proxy": {"proxy_enabled": "1", "proxy_url": "p", "proxy_port": "3128", "proxy_username": "u",
                      "proxy_password": "******"},
            "logging": {"loglevel": "debug"},
        }  # fmt: skip
        splunkd.passwords[(f"__REST_CREDENTIAL__#{APP}#configs/conf-{SETTINGS_CONF}", "proxy")] = json.dumps(
            {"proxy_password": "pr0xy-pass"}
        )
        settings = SplunkdSettings(splunkd.url, SESSION_KEY)
        account = settings.account("eu")
        assert (account.api_url, account.client_id, account.client_secret) == (
            "https://api.agari-eu.com",
            "cid",
            "s3cret-value",
        )
        assert account.token_path == "/v1/ep/token"
        assert settings.proxy_url() == "http://u:pr0xy-pass@p:3128"
        assert settings.log_level() == "DEBUG"
        assert "s3cret-value" not in repr(account)
