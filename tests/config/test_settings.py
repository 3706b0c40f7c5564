"""Settings from any mapping: a caller's own keys (a tenant's fields, a Splunk input's fields) mapped
to the variables they set, each problem naming the caller's key; and the API proxy as an argument.
(The environment's rules, through ``load_settings``, are in tests/test_config.py.)"""

from __future__ import annotations

import pytest

from forwarder.config import load_settings, settings_from
from forwarder.errors import ConfigError, Problem
from forwarder.sinks.hec import HecOptions

BASE = {
    "FORWARDER_API_URL": "https://api.example.com",
    "FORWARDER_CLIENT_ID": "id",
    "FORWARDER_CLIENT_SECRET": "s3cr3t-value",
}
NAMES = {"index": "FORWARDER_HEC_INDEX", "rate": "FORWARDER_MAX_RPS", "who": "FORWARDER_USERS"}
# the HEC index is a Splunk HEC sink's own option: it reaches the settings with one
HEC = {"FORWARDER_SINK": "hec+https://splunk.example.com:8088", "FORWARDER_SINK_TOKEN": "hec-token"}


def hec_index(settings):
    return settings.sink.options_of(HecOptions).index


def structured(mapping, names=None):
    with pytest.raises(ConfigError) as info:
        settings_from(mapping, names)
    return info.value.structured


def test_the_callers_keys_set_their_variables_over_the_variables_own_names():
    settings = settings_from(
        {**BASE, **HEC, "FORWARDER_HEC_INDEX": "env", "index": "mine", "rate": 2.5, "who": ["a@x.example"]},
        NAMES,
    )
    assert (hec_index(settings), settings.max_rps, settings.users) == ("mine", 2.5, ("a@x.example",))


def test_each_problem_names_the_callers_key_and_the_others_their_variable():
    found = structured({**BASE, "FORWARDER_FORMAT": "xml", "rate": "-1", "who": "not-an-email"}, NAMES)
    assert [p.variable for p in found] == ["who", "FORWARDER_FORMAT", "rate"]  # the table's order
    assert found[0] == Problem("who", "'not-an-email' is not an email address")


def test_a_value_of_the_wrong_type_is_a_problem_of_its_key():
    assert structured({**BASE, "index": ["a"], "who": [1]}, NAMES) == [
        Problem("who", "expected a list of strings"),
        Problem("index", "expected text"),
    ]


def test_a_required_setting_not_given_is_named_as_the_caller_names_it():
    names = {"id": "FORWARDER_CLIENT_ID", "secret": "FORWARDER_CLIENT_SECRET", "ref": "FORWARDER_CREDENTIALS"}
    found = structured({"FORWARDER_API_URL": "https://api.example.com", "id": "x"}, names)
    assert found == [Problem("secret", "required (or set ref)")]
    with pytest.raises(ConfigError) as info:  # the environment's words are unchanged
        load_settings({"FORWARDER_API_URL": "https://api.example.com", "FORWARDER_CLIENT_ID": "x"})
    assert info.value.problems == ["FORWARDER_CLIENT_SECRET: required (or set FORWARDER_CREDENTIALS)"]


def test_a_mapping_is_not_an_environment_only_its_own_keys_are_read(monkeypatch):
    monkeypatch.setenv("FORWARDER_HEC_INDEX", "from-the-process")
    assert hec_index(settings_from({**BASE, **HEC})) is None
    notices = settings_from({**BASE, "FORWARDER_HEC_INDX": "x", "index": "i"}, NAMES).notices
    assert [n.split(":")[0] for n in notices] == ["FORWARDER_HEC_INDX"]  # a misspelt variable, not a key


def test_the_api_proxy_is_an_argument_kept_out_of_reprs_with_its_password_a_secret():
    assert load_settings(BASE).api_proxy is None  # the environment's, as requests reads it
    settings = settings_from(BASE, api_proxy="http://me:pr0xy-pass@proxy.example:3128")
    assert settings.api_proxy == "http://me:pr0xy-pass@proxy.example:3128"
    assert "pr0xy-pass" not in repr(settings) and "pr0xy-pass" in settings.secrets()
    assert settings_from(BASE, api_proxy="").api_proxy == ""  # none, whatever the environment says


def test_a_variable_given_as_a_value_not_text_is_read_as_a_document_would_be():
    settings = settings_from({**BASE, "FORWARDER_MAX_RPS": 2, "FORWARDER_USERS": ["a@x.example"]})
    assert (settings.max_rps, settings.users) == (2.0, ("a@x.example",))
    assert structured({**BASE, "FORWARDER_HEC_INDEX": None}) == [
        Problem("FORWARDER_HEC_INDEX", "expected text")
    ]
