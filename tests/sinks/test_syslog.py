"""The syslog sink against a real rsyslogd on loopback, over plain TCP and over TLS: every record
arrives intact, one record per octet-counted frame, compared record by record."""

from __future__ import annotations

import json
import socket
import threading
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder import retry, stop
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.normalize.cef import format_cef
from forwarder.normalize.ocsf import format_ocsf
from forwarder.records import parse_record
from forwarder.sinks import open_sink
from forwarder.sinks.settings import SinkSettings
from forwarder.sinks.syslog import SyslogSink, address, frame
from forwarder.timeutil import format_us
from tests.cef_parser import parse
from tests.fakes import Waits
from tests.normalize import OPTIONS
from tests.sinks.helpers import sink_settings
from tests.syslog.rsyslog import MAX_MESSAGE
from tests.syslog.slow_tls import SlowTlsReceiver

# rsyslog stores messages as C strings and writes NUL as "#000" whatever the settings: not ours to test.
HOSTILE = st.sampled_from([*"|=\\\r\n \té例😀", "cs6=", " msg=", "CEF:0|", "10 <13>1 "])
TEXT = st.one_of(
    st.lists(
        HOSTILE | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
    ).map("".join),
    st.builds(lambda a: a * 10_000, HOSTILE),
).filter(bool)
INPUTS = ["tcp", "tls"]


class Counter:
    """Stands in for rsyslog's file position: how many records a test has already consumed."""

    seen = {"tcp": 0, "tls": 0}


def sink_for(rsyslog, name, **kwargs):
    settings = sink_settings(uri=rsyslog.uri(name), ca_bundle=rsyslog.ca_bundle, host="forwarder.test")
    return SyslogSink(settings, max_message_bytes=MAX_MESSAGE, **kwargs)


def received(rsyslog, name, count):
    start = Counter.seen[name]
    records = rsyslog.records(name, start + count)[start:]
    Counter.seen[name] += count
    return records


def cef_event(actor, obj, action, before, after):
    raw = {
        "filterable_action": "user.update",
        "action": action,
        "user": actor,
        "object": obj,
        "changes": {"full_name": [before, after]},
        "created_at": "2026-02-03T04:05:06.789012Z",
    }
    record = parse_record(raw)
    return record, format_cef(record, OPTIONS)


@pytest.mark.parametrize("name", INPUTS)
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(values=st.lists(st.tuples(TEXT, TEXT, TEXT, TEXT, TEXT), min_size=1, max_size=8))
def test_hostile_cef_records_arrive_intact_one_per_frame(rsyslog, name, values):
    pairs = [cef_event(*value) for value in values]
    sink = sink_for(rsyslog, name)
    try:
        result = sink.send([event for _, event in pairs])
    finally:
        sink.close()
    assert (result.delivered, result.rejected) == (len(pairs), [])
    for (record, event), got in zip(pairs, received(rsyslog, name, len(pairs))):
        assert got["msg"] == event.body.decode("utf-8")  # byte for byte, nothing split or merged
        assert parse(got["msg"]).labelled()["eventId"] == record.event_id
        assert (got["hostname"], got["app_name"], got["msgid"], got["pri"]) == (
            "forwarder.test",
            "emailauth-audit",
            "audit",
            "109",
        )
        assert got["timestamp"] == format_us(record.ts_us)


@pytest.mark.parametrize("name", INPUTS)
def test_a_json_event_is_the_message(rsyslog, name):
    record = parse_record(
        {
            "filterable_action": "user.login",
            "user": "a@example.com\n<13>1 forged",
            "created_at": "2026-02-03T04:05:06Z",
        }
    )
    event = format_ocsf(record, OPTIONS)
    sink = sink_for(rsyslog, name)
    sink.send([event])
    sink.close()
    (got,) = received(rsyslog, name, 1)
    assert json.loads(got["msg"])["metadata"]["uid"] == record.event_id
    assert got["msg"].encode("utf-8") == event.body


def test_a_receiver_restart_between_batches_loses_nothing(rsyslog):
    sink = sink_for(rsyslog, "tcp")
    events = [Event(f"id{n}", 1_000_000 * n, f"CEF:0|v|p|1|s|n|5|cs6={n}".encode()) for n in range(4)]
    sink.send(events[:2])
    received(rsyslog, "tcp", 2)
    rsyslog.stop()
    rsyslog.start()  # same ports, new process: the sink's connection is dead
    sink.send(events[2:])
    sink.close()
    assert [got["msg"] for got in received(rsyslog, "tcp", 2)] == [
        "CEF:0|v|p|1|s|n|5|cs6=2",
        "CEF:0|v|p|1|s|n|5|cs6=3",
    ]


def test_an_oversize_message_is_rejected_not_sent(rsyslog):
    sink = SyslogSink(SinkSettings(uri=rsyslog.uri("tcp")), max_message_bytes=200)
    small, big = Event("s", 0, b"CEF:0|v|p|1|s|n|5|msg=small"), Event("b", 0, b"x" * 300)
    result = sink.send([big, small])
    sink.close()
    assert result.delivered == 1 and [r.event.id for r in result.rejected] == ["b"]
    assert "over the 200-byte limit" in result.rejected[0].reason
    assert [got["msg"] for got in received(rsyslog, "tcp", 1)] == ["CEF:0|v|p|1|s|n|5|msg=small"]


def test_an_unknown_certificate_authority_fails_at_once(rsyslog):
    waits = Waits()
    sink = SyslogSink(  # system CAs do not know the test CA
        SinkSettings(uri=rsyslog.uri("tls")), retry_policy=retry.RetryPolicy(sleep=waits)
    )
    with pytest.raises(
        SinkError, match=r"syslog receiver: TLS with localhost:\d+ failed: certificate not trusted"
    ) as info:
        sink.send([Event("x", 0, b"CEF:0|v|p|1|s|n|5|")])
    assert not info.value.retryable and waits == []


def test_a_refused_connection_is_retried_then_retryable():
    waits = Waits()
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = SyslogSink(
        SinkSettings(uri=f"syslog+tcp://127.0.0.1:{port}"),
        retry_policy=retry.RetryPolicy(attempts=3, sleep=waits),
    )
    with pytest.raises(SinkError, match="after 3 attempts") as info:
        sink.send([Event("x", 0, b"CEF:0|v|p|1|s|n|5|")])
    assert info.value.retryable and len(waits) == 2


def test_registry_and_uri_rules():
    sink = open_sink(SinkSettings(uri="syslog+tls://siem.example.com"))
    assert (sink.host, sink.port, sink.tls) == ("siem.example.com", 6514, True)
    assert address(urlsplit("syslog+tcp://10.0.0.1")) == ("10.0.0.1", 514, False)
    for bad in [
        "syslog+udp://h:514",
        "syslog+tcp://h:514/path",
        "syslog+tcp://h:514?x=1",
        "syslog+tcp://:514",
        "syslog+tls://user:pw@h:6514",
    ]:
        with pytest.raises(ValueError, match="FORWARDER_SINK"):
            address(urlsplit(bad))


def test_frame_counts_octets_not_characters():
    assert frame("é\n".encode()) == b"3 \xc3\xa9\n"


@pytest.mark.parametrize("name", INPUTS)
def test_raw_line_breaks_in_a_body_cannot_split_or_forge_a_record(rsyslog, name):
    forged = b"line one\nline two\r\n27 <13>1 - evil - - - - forged\n<13>1 - - - - - - newline forged\n"
    events = [Event("a", 0, forged), Event("b", 1, b"after")]
    sink = sink_for(rsyslog, name)
    sink.send(events)
    sink.close()
    assert [got["msg"].encode("utf-8") for got in received(rsyslog, name, 2)] == [forged, b"after"]


@pytest.fixture
def slow_tls(tmp_path):
    receiver = SlowTlsReceiver(tmp_path)
    yield receiver
    receiver.close()


@pytest.mark.parametrize("reply", ["close_notify", "eof"])
def test_a_slow_reading_tls13_receiver_gets_every_event_20_runs_of_20(slow_tls, reply):
    """The receiver's session tickets wait unread in the sink's socket while it reads late: a bare close
    answered them with a reset that discarded what the receiver had not read yet (0 runs of 20 got
    every event). The receiver may answer the sink's close_notify with its own or just end TCP."""
    slow_tls.reply = reply
    events = [Event(f"id{n}", n, f"CEF:0|v|p|1|s|n|5|cs6={n}".encode()) for n in range(2000)]
    sink = SyslogSink(SinkSettings(uri=slow_tls.uri, ca_bundle=slow_tls.ca_bundle, timeout_seconds=10))
    for run in range(20):
        slow_tls.start()
        try:
            assert sink.send(events).delivered == len(events)
        finally:
            sink.close()
        messages, error = slow_tls.result()
        assert (len(messages), error) == (len(events), None), f"run {run + 1} of 20"
        assert messages[-1].endswith(b"cs6=1999")


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("reset", "closed the connection without an answer"),
        ("silent", "no complete response"),
        ("trickle", "no complete response"),
    ],
)
def test_a_receiver_that_does_not_end_cleanly_fails_the_batch(slow_tls, reply, problem):
    """Everything was read, but nothing proves it: a reset, or no end before the deadline (also for a
    receiver that keeps the connection alive with a byte now and then), fails the batch (it is sent
    again: at least once)."""
    slow_tls.reply = reply
    settings = SinkSettings(uri=slow_tls.uri, ca_bundle=slow_tls.ca_bundle, timeout_seconds=1)
    sink = SyslogSink(settings, retry_policy=retry.RetryPolicy(attempts=1))
    slow_tls.start()
    with pytest.raises(SinkError, match=problem) as info:
        sink.send([Event("x", 0, b"CEF:0|v|p|1|s|n|5|")])
    assert info.value.retryable
    (message,) = slow_tls.result()[0]
    assert message.endswith(b" audit - CEF:0|v|p|1|s|n|5|")


def test_a_stop_cuts_the_wait_for_the_receivers_end(slow_tls):
    """A stop request (SIGTERM) does not wait out the timeout: the batch stays undelivered. (One
    attempt: without the cut, the timeout would end it in a SinkError.)"""
    slow_tls.reply = "silent"
    settings = SinkSettings(uri=slow_tls.uri, ca_bundle=slow_tls.ca_bundle, timeout_seconds=20)
    sink = SyslogSink(settings, retry_policy=retry.RetryPolicy(attempts=1))
    slow_tls.start()
    threading.Thread(target=lambda: slow_tls.read_all.wait(20) and stop.request(), daemon=True).start()
    try:
        with pytest.raises(stop.Stopped, match="syslog receiver"):
            sink.send([Event("x", 0, b"CEF:0|v|p|1|s|n|5|")])
    finally:
        stop.reset()
    assert len(slow_tls.result()[0]) == 1
