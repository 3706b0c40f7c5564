"""`check`'s sink probes (forwarder.sinks.probe_sink): each reaches its sink, over loopback fakes and
the moto server, and proves what it says without sending an event; each failure says what to check.

`check`'s syslog probe against a real rsyslogd: it connects (and shakes hands over TLS with the
certificate verified) and writes nothing; what comes first into rsyslog afterwards is the next record.
"""

from __future__ import annotations

import os
import typing

import boto3
import pytest

from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.retry import Pace
from forwarder.sinks import open_sink, probe_sink, schemes
from forwarder.sinks.settings import SinkSettings
from tests.e2e.helpers import HEC_TOKEN
from tests.receivers.bulk import BulkReceiver
from tests.receivers.http_collector import HttpCollector
from tests.receivers.silent import closed_port
from tests.sinks.helpers import firehose_into_bucket


def test_every_sink_module_has_a_probe():
    from forwarder.sinks import REGISTRY

    for scheme in schemes():
        module = REGISTRY.load(scheme)  # its own probe, or the probe of the sink it opens
        opens = module.open_sink
        made = opens if isinstance(opens, type) else typing.get_type_hints(opens)["return"]
        assert callable(getattr(module, "probe", None) or getattr(made, "probe", None)), scheme


# -- Splunk HEC --------------------------------------------------------------------------------------


def test_hec_health_and_token_are_proven_and_nothing_is_indexed(hec):
    line = probe_sink(SinkSettings(uri=hec.url, token=HEC_TOKEN))
    assert line == (
        f"Splunk HEC at 127.0.0.1:{hec.port}: healthy (HTTP 200, code 17: HEC is healthy); token accepted "
        "(an empty request got HTTP 400, code 5: No data)"
    )
    assert hec.events() == []
    assert [(s.path, s.status) for s in hec.seen()] == [
        ("/services/collector/health", 200),
        ("/services/collector/event", 400),
    ]


def test_a_hec_token_refused_names_FORWARDER_SINK_TOKEN(hec):
    with pytest.raises(SinkError) as caught:
        probe_sink(SinkSettings(uri=hec.url, token="not-the-token"))
    assert str(caught.value) == (
        "Splunk HEC refused the token: HTTP 403, code 4: Invalid token; check FORWARDER_SINK_TOKEN and what "
        "it is allowed to write"
    )
    assert "not-the-token" not in str(caught.value)


def test_an_unhealthy_hec_fails_the_probe(hec, waits):
    hec.fail_next(5, status=503)
    with pytest.raises(SinkError, match=r"Splunk HEC at .* still failing after 5 attempts: HTTP 503, code 9"):
        probe_sink(SinkSettings(uri=hec.url, token=HEC_TOKEN), pace=Pace(sleep=waits))
    assert hec.events() == []


def test_a_hec_that_is_not_there_is_refused_naming_FORWARDER_SINK(waits):
    with closed_port() as port, pytest.raises(SinkError) as caught:
        settings = SinkSettings(uri=f"hec+http://127.0.0.1:{port}", token=HEC_TOKEN, max_attempts=1)
        probe_sink(settings, pace=Pace(sleep=waits))
    assert str(caught.value) == (
        f"Splunk HEC: 127.0.0.1:{port} refused the connection (nothing listens on that port); check the "
        "host and port in FORWARDER_SINK, and that the service runs"
    )


def test_a_hec_without_its_health_endpoint_still_gets_its_token_checked(hec):
    hec.health = False
    line = probe_sink(SinkSettings(uri=hec.url, token=HEC_TOKEN))
    assert hec.events() == []
    assert "no health endpoint at that path (HTTP 404); token accepted" in line


def test_an_endpoint_that_is_not_hec_is_said_so():
    with HttpCollector(path="/services/collector/event") as collector:
        with pytest.raises(SinkError, match="check that FORWARDER_SINK is a Splunk HEC endpoint"):
            probe_sink(SinkSettings(uri="hec+" + collector.http_url, token=HEC_TOKEN))
        assert collector.lines() == []


# -- Elasticsearch -----------------------------------------------------------------------------------


@pytest.fixture
def es():
    with BulkReceiver() as receiver:
        yield receiver


def es_settings(es, **extra):
    return SinkSettings(uri=es.url, token=es.encoded_api_key(), **extra)


def test_elasticsearch_credentials_privileges_and_template(es):
    line = probe_sink(es_settings(es))
    assert line == (
        f"Elasticsearch at 127.0.0.1:{es.port}: authenticated as forwarder; may write "
        "logs-emailauth.audit-default; index template logs-emailauth.audit installed"
    )
    assert es.docs == {} and all(s.path != "/_bulk" for s in es.seen())


def test_elasticsearch_credentials_that_may_not_write_the_data_stream(es):
    es.privileges = {"create_doc"}
    with pytest.raises(
        SinkError, match=r"may not write logs-emailauth.audit-default .*check FORWARDER_SINK_TOKEN"
    ):
        probe_sink(es_settings(es))


def test_elasticsearch_without_the_index_template(es):
    es.templates = set()
    with pytest.raises(
        SinkError,
        match=r"no index template logs-emailauth.audit: install it first \(elasticsearch/README.md\)",
    ):
        probe_sink(es_settings(es))


def test_elasticsearch_refused_credentials_name_FORWARDER_SINK_TOKEN(es):
    with pytest.raises(SinkError, match=r"refused the credentials: HTTP 401.*check FORWARDER_SINK_TOKEN"):
        probe_sink(SinkSettings(uri=es.url, token="a2V5LWlkLTE6d3Jvbmc="))


def test_a_collector_that_does_not_implement_options_is_reached_not_retried(waits):
    with HttpCollector() as collector:
        collector.fail_next(1, status=501)
        line = probe_sink(SinkSettings(uri=collector.url), pace=Pace(sleep=waits))
    assert line.endswith("answered OPTIONS with HTTP 501 (reachable; the token is first proven by a batch)")
    assert waits == []


def test_a_bulk_only_receiver_is_only_reached():
    with BulkReceiver(bulk_only=True) as receiver:
        line = probe_sink(es_settings(receiver))
    assert line.endswith(": reachable (HTTP 400, no security API: nothing else checked)")


# -- HTTP --------------------------------------------------------------------------------------------


def test_an_http_collector_is_reached_with_options_and_stores_nothing():
    with HttpCollector(authorization="Bearer t0ken-value") as collector:
        line = probe_sink(SinkSettings(uri=collector.url, token="t0ken-value"))
        assert collector.lines() == [] and [s.path for s in collector.seen()] == ["/ingest"]
    assert line == (
        f"HTTP collector at 127.0.0.1:{collector.port} answered OPTIONS with HTTP 404 (reachable; the token "
        "is first proven by a batch)"
    )


def test_an_http_collector_refusing_the_credentials():
    refused = r"refused the credentials: HTTP 401.*check FORWARDER_SINK_TOKEN"
    with (
        HttpCollector(authorization="Bearer t0ken-value") as collector,
        pytest.raises(SinkError, match=refused),
    ):
        probe_sink(SinkSettings(uri=collector.url, token="wrong-token"))


# -- file and stdout ---------------------------------------------------------------------------------


def test_a_file_not_there_yet_is_not_created(tmp_path):
    target = tmp_path / "new" / "events.ndjson"
    line = probe_sink(SinkSettings(uri=target.as_uri()))
    assert line == f"file {target}: not there yet; {tmp_path} is writable, so the first batch creates it"
    assert not (tmp_path / "new").exists()


def test_an_existing_file_is_left_as_it_was(tmp_path):
    target = tmp_path / "events.ndjson"
    target.write_bytes(b"{}\n")
    assert probe_sink(SinkSettings(uri=target.as_uri())) == f"file {target}: exists and is writable (3 bytes)"
    assert target.read_bytes() == b"{}\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_directory_not_writable_fails(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(SinkError, match=f"{locked} is not writable; check FORWARDER_SINK"):
        probe_sink(SinkSettings(uri=(locked / "events.ndjson").as_uri()))


def test_a_path_through_a_file_fails(tmp_path):
    (tmp_path / "plain").write_text("")
    with pytest.raises(SinkError, match=f"{tmp_path / 'plain'} is not a directory; check FORWARDER_SINK"):
        probe_sink(SinkSettings(uri=(tmp_path / "plain" / "events.ndjson").as_uri()))


def test_stdout_has_nothing_to_reach():
    assert probe_sink(SinkSettings(uri="stdout")) == "standard output: nothing to reach"


# -- AWS (the moto server) ---------------------------------------------------------------------------


def test_an_s3_bucket_is_reached_and_nothing_is_written(aws):
    client = boto3.client("s3")
    client.create_bucket(Bucket="audit-lake")
    line = probe_sink(SinkSettings(uri="s3://audit-lake/audit"))
    assert line == "bucket s3://audit-lake: exists and these credentials reach it (HeadBucket)"
    assert client.list_objects_v2(Bucket="audit-lake").get("KeyCount") == 0


def test_a_missing_s3_bucket_fails_naming_FORWARDER_SINK(aws):
    with pytest.raises(SinkError, match="bucket s3://nowhere does not exist; check FORWARDER_SINK"):
        probe_sink(SinkSettings(uri="s3://nowhere/audit"))


def test_an_active_firehose_stream_is_reached_and_nothing_is_put(aws):
    firehose_into_bucket("audit", "fh-dest")
    assert probe_sink(SinkSettings(uri="firehose://audit")) == (
        "Firehose stream audit: ACTIVE (DescribeDeliveryStream)"
    )
    assert boto3.client("s3").list_objects_v2(Bucket="fh-dest").get("KeyCount") == 0


def test_a_missing_firehose_stream_fails_naming_FORWARDER_SINK(aws):
    with pytest.raises(SinkError, match="Firehose stream missing does not exist; check FORWARDER_SINK"):
        probe_sink(SinkSettings(uri="firehose://missing"))


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
