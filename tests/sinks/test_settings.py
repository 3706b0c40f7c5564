"""What a sink is configured with (forwarder/sinks/settings.py): the shared settings, and each sink's
own options, filled from its variables and read by that sink only."""

from __future__ import annotations

import dataclasses

from forwarder.config.table import BY_NAME, VARIABLES
from forwarder.sinks import REGISTRY, health_settings, schemes, sink_options
from forwarder.sinks.hec import HecOptions
from forwarder.sinks.http_ndjson import HttpOptions
from forwarder.sinks.sentinel import SentinelOptions
from forwarder.sinks.settings import SinkSettings


def test_options_take_their_variables_values_and_their_defaults_for_the_rest():
    options = HecOptions.from_values({"FORWARDER_HEC_INDEX": "audit", "FORWARDER_HEC_ACK": None, "OTHER": 1})
    assert options == HecOptions(index="audit", sourcetype="emailauth:audit", ack=False)
    assert sink_options("hec+https://splunk.example.com:8088", {"FORWARDER_HEC_ACK": True}) == HecOptions(
        ack=True
    )
    assert sink_options("stdout", {"FORWARDER_HEC_ACK": True}) is None  # a sink without options


def test_a_secret_option_stays_out_of_the_repr_and_is_listed_for_masking():
    options = SentinelOptions(client_id="app", client_secret="s3cr3t-value")
    assert "s3cr3t-value" not in repr(SinkSettings(uri="sentinel+https://dce.example", options=options))
    assert options.secrets() == ["s3cr3t-value"] and SentinelOptions().secrets() == []


def test_settings_without_options_read_as_the_sinks_defaults():
    assert SinkSettings(uri="hec+https://h:8088").options_of(HecOptions) == HecOptions()
    given = SinkSettings(uri="hec+https://h:8088", options=HecOptions(index="x"))
    assert given.options_of(HecOptions).index == "x"


def test_the_health_event_gets_splunks_health_sourcetype_and_other_sinks_keep_theirs():
    hec = health_settings(SinkSettings(uri="hec+https://h:8088", options=HecOptions(sourcetype="st")))
    assert hec.options_of(HecOptions).sourcetype == "st:health"
    plain = SinkSettings(uri="https://collector.example/x", options=HttpOptions(body="json-array"))
    assert health_settings(plain) == plain
    assert health_settings(SinkSettings(uri="stdout")) == SinkSettings(uri="stdout")


def test_every_sink_option_is_a_table_variable_and_every_sink_variable_is_read():
    read = set()
    for scheme in schemes():
        kind = getattr(REGISTRY.load(scheme), "Options", None)
        for variable in kind.variables() if kind else ():
            assert BY_NAME[variable.name] == variable and variable.sink_option, variable.name
            read.add(variable.name)
    assert read == {v.name for v in VARIABLES if v.sink_option}


def test_the_uri_is_parsed_once_with_the_settings_and_again_only_when_it_changes():
    settings = SinkSettings(uri="syslog+tls://siem.example.com:6514")
    assert (settings.address.scheme, settings.address.hostname, settings.address.port) == (
        "syslog+tls",
        "siem.example.com",
        6514,
    )
    moved = dataclasses.replace(settings, uri="syslog+tcp://other.example.com")
    assert moved.address.hostname == "other.example.com" and "address" not in repr(moved)
