"""`check`'s syslog probe against a real rsyslogd: it connects (and shakes hands over TLS with the
certificate verified) and writes nothing; what comes first into rsyslog afterwards is the next record."""

from __future__ import annotations

import pytest

from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.sinks import open_sink, probe_sink
from forwarder.sinks.settings import SinkSettings
from tests.receivers.silent import closed_port


def first_record_after_probe(rsyslog, name):
    settings = SinkSettings(uri=rsyslog.uri(name), ca_bundle=rsyslog.ca_bundle)
    line = probe_sink(settings)
    sink = open_sink(settings)
    sink.send([Event("m", 0, b"CEF:0|v|p|1|s|n|5|msg=marker")])
    sink.close()
    return line, rsyslog.records(name, 1)[0]["msg"]


def test_tcp_connects_and_writes_nothing(rsyslog):
    line, first = first_record_after_probe(rsyslog, "tcp")
    assert line == f"syslog receiver localhost:{rsyslog.ports['tcp']}: connected, plain TCP, ended cleanly"
    assert first == "CEF:0|v|p|1|s|n|5|msg=marker"


def test_tls_verifies_the_certificate_and_writes_nothing(rsyslog):
    line, first = first_record_after_probe(rsyslog, "tls")
    assert line.startswith(
        f"syslog receiver localhost:{rsyslog.ports['tls']}: connected, TLS verified (TLSv1."
    )
    assert first == "CEF:0|v|p|1|s|n|5|msg=marker"


def test_an_unknown_certificate_authority_fails_naming_FORWARDER_SINK_CA_BUNDLE(rsyslog):
    with pytest.raises(SinkError) as caught:
        probe_sink(SinkSettings(uri=rsyslog.uri("tls")))  # the system's CAs do not know the test CA
    text = str(caught.value)
    assert text.startswith(
        f"syslog receiver: TLS with localhost:{rsyslog.ports['tls']} failed: certificate not trusted"
    )
    assert text.endswith("check FORWARDER_SINK_CA_BUNDLE, or that FORWARDER_SINK names a TLS port")


def test_nothing_listening_is_a_refusal_naming_FORWARDER_SINK():
    with closed_port() as port, pytest.raises(SinkError) as caught:
        probe_sink(SinkSettings(uri=f"syslog+tcp://127.0.0.1:{port}", max_attempts=1))
    assert str(caught.value) == (
        f"syslog receiver: 127.0.0.1:{port} refused the connection (nothing listens on that port); check the "
        "host and port in FORWARDER_SINK, and that the service runs"
    )
