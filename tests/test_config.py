from __future__ import annotations

import pytest

from forwarder.config import VARIABLES, load_settings, to_unicode_domain
from forwarder.errors import ConfigError

BASE = {
    "FORWARDER_API_URL": "https://api.example.com",
    "FORWARDER_CLIENT_ID": "id",
    "FORWARDER_CLIENT_SECRET": "s3cr3t-value",
}


def problems(**env: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({**BASE, **env})
    return info.value.problems


def test_defaults_follow_the_contract():
    s = load_settings(BASE)
    assert s.object_types == ("user", "domain")
    assert s.format == "ecs" and s.sink.uri == "stdout" and s.state == "./state"
    assert s.initial_lookback_s == 14 * 86400 and s.lookback_window_s == 3600
    assert s.token_path == "/v1/ep/token"


def test_every_problem_is_reported_at_once_naming_its_variable():
    found = problems(
        FORWARDER_API_URL="http://api.example.com",
        FORWARDER_OBJECT_TYPES="user,organisation",
        FORWARDER_FORMAT="xml",
        FORWARDER_INITIAL_LOOKBACK="fortnight",
        FORWARDER_CONCURRENCY="0",
        FORWARDER_SINK="kafka://broker",
        FORWARDER_USERS="alice@example.com,bob",
        FORWARDER_SINK_VERIFY_TLS="maybe",
    )
    names = [p.split(":")[0] for p in found]
    assert names == [
        "FORWARDER_API_URL",
        "FORWARDER_OBJECT_TYPES",
        "FORWARDER_USERS",
        "FORWARDER_FORMAT",
        "FORWARDER_SINK",
        "FORWARDER_SINK_VERIFY_TLS",
        "FORWARDER_INITIAL_LOOKBACK",
        "FORWARDER_CONCURRENCY",
    ]
    assert "loopback" in found[0]
    assert "'bob'" in found[2]


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:9"])
def test_plain_http_only_for_loopback(url):
    assert load_settings({**BASE, "FORWARDER_API_URL": url}).api_url == url


def test_credentials_required_unless_a_reference_is_given():
    env = {"FORWARDER_API_URL": "https://api.example.com"}
    with pytest.raises(ConfigError) as info:
        load_settings(env)
    assert [p.split(":")[0] for p in info.value.problems] == [
        "FORWARDER_CLIENT_ID",
        "FORWARDER_CLIENT_SECRET",
    ]
    s = load_settings({**env, "FORWARDER_CREDENTIALS": "secretsmanager:prod/emailauth"})
    assert s.credentials_ref == "secretsmanager:prod/emailauth"
    assert problems(FORWARDER_CREDENTIALS="vault:x")[0].startswith("FORWARDER_CREDENTIALS")


def test_domains_become_unicode_lowercase_and_bad_ones_are_named():
    s = load_settings({**BASE, "FORWARDER_DOMAINS": "XN--BCHER-KVA.example, Example.COM., bücher.example"})
    assert s.domains == ("bücher.example", "example.com")
    assert to_unicode_domain("xn--bcher-kva.example") == "bücher.example"
    assert "not a valid domain" in problems(FORWARDER_DOMAINS="bad..domain")[0]


def test_overlapping_or_malformed_filters_are_refused():
    assert "covered by 'user.'" in problems(FORWARDER_FILTERS="user.,user.login")[0]
    assert "filterable_action prefix" in problems(FORWARDER_FILTERS="User Login")[0]


def test_secrets_stay_out_of_repr_and_errors():
    s = load_settings({**BASE, "FORWARDER_SINK_TOKEN": "hec-token-value"})
    assert "s3cr3t-value" not in repr(s) and "hec-token-value" not in repr(s)
    assert s.secrets() == ["s3cr3t-value", "hec-token-value"]
    text = str(ConfigError(problems(FORWARDER_SINK="https://user:pw@host/x")))
    assert "pw" not in text.replace("put credentials", "")


def test_every_variable_has_help_and_secret_ones_have_no_default():
    for v in VARIABLES:
        assert v.name.startswith("FORWARDER_") and v.help
        if v.secret:
            assert v.default is None


def test_the_readme_documents_every_variable():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    missing = [v.name for v in VARIABLES if f"| `{v.name}` |" not in readme]
    assert missing == []
