"""The RELP sink: its frames, then against receivers written here (cut sessions, refusals, silence, the
window) and a real rsyslogd with imrelp, plain and TLS: every event answered and stored once, and a
receiver killed mid-batch loses nothing."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import Counter
from typing import Callable, List, Optional
from urllib.parse import urlsplit

import pytest

from forwarder import deadline, retry, stop
from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.sinks import open_sink, probe_sink, sink_problems
from forwarder.sinks.relp import EXAMPLE, WINDOW, Frame, RelpSink, address, encode, parse, status
from forwarder.sinks.settings import SinkSettings
from tests.sinks.helpers import sink_settings
from tests.syslog.rsyslog import MAX_MESSAGE

OPEN_OK = b"200 OK\nrelp_version=0\nrelp_software=test\ncommands=syslog"


def events(n: int) -> List[Event]:
    return [Event(f"id{i}", i, f"CEF:0|v|p|1|s|n|5|cs6={i}".encode()) for i in range(n)]


def sink_for(
    uri: str,
    ca_bundle: Optional[str] = None,
    attempts: int = 5,
    timeout: float = 10,
    sleep: retry.Sleep = retry.sleep,
) -> RelpSink:
    settings = sink_settings(uri=uri, ca_bundle=ca_bundle, host="forwarder.test", timeout_seconds=timeout)
    tries = retry.RetryPolicy(attempts=attempts, sleep=sleep)
    return RelpSink(settings, tries, max_message_bytes=MAX_MESSAGE)


# --- frames ---------------------------------------------------------------------------------------


def test_frames_round_trip_in_any_pieces():
    wire = (
        encode(1, "rsp", OPEN_OK) + encode(2, "rsp", b"200 OK") + encode(3, "rsp") + encode(0, "serverclose")
    )
    expected = [
        Frame(1, "rsp", OPEN_OK),
        Frame(2, "rsp", b"200 OK"),
        Frame(3, "rsp", b""),
        Frame(0, "serverclose", b""),
    ]
    for cut in range(len(wire) + 1):  # every split point: a frame cut anywhere waits for the rest
        first, rest = parse(wire[:cut])
        second, left = parse(rest + wire[cut:])
        assert (first + second, left) == (expected, b"")


def test_a_frame_length_counts_octets_and_data_may_hold_anything():
    data = "é\n12 rsp 3 x\n".encode()
    assert encode(7, "syslog", data) == b"7 syslog 14 " + data + b"\n"
    assert parse(encode(7, "syslog", data)) == ([Frame(7, "syslog", data)], b"")


@pytest.mark.parametrize(
    "wire",
    [
        b"HTTP/1.1 400 Bad Request\r\n",
        b"1 rsp 6 200 OKX",  # no trailer where the length says
        b"1 rsp 0 \n",  # no data yet a space
        b"1 rsp 6\n200 OK\n",  # data without its space
        b"1234567890 rsp 0\n",  # ten digits
        b"1 rsp 99999999 ",  # longer than any answer
        b"1 r_p 0\n",
    ],
)
def test_bytes_that_are_not_relp_end_the_session(wire):
    with pytest.raises(retry.TryAgain, match="not RELP"):
        parse(wire)


def test_status_and_offers():
    assert status(OPEN_OK) == (True, [b"relp_version=0", b"relp_software=test", b"commands=syslog"])
    assert status(b"500 command disabled") == (False, [])
    assert status(b"2000 OK")[0] is False


def test_uri_rules_and_registry():
    assert address(urlsplit("relp+tcp://10.0.0.1")) == ("10.0.0.1", 2514, False)
    assert address(urlsplit("relp+tls://siem.example.com:20514")) == ("siem.example.com", 20514, True)
    sink = open_sink(SinkSettings(uri="relp+tls://siem.example.com"))
    assert isinstance(sink, RelpSink) and (sink.host, sink.port, sink.tls) == ("siem.example.com", 2514, True)
    for bad in ["relp+udp://h:2514", "relp+tcp://h:2514/path", "relp+tcp://:2514", "relp+tls://u:pw@h"]:
        with pytest.raises(ValueError, match="FORWARDER_SINK"):
            address(urlsplit(bad))
    assert sink_problems(SinkSettings(uri="relp+tcp://h:2514/x"), "cef") == [
        f"FORWARDER_SINK for RELP takes a host and a port only, like {EXAMPLE}"
    ]


# --- receivers written for the test ---------------------------------------------------------------


class FakeReceiver:
    """A RELP receiver on loopback, one connection at a time. ``answer(frame, messages so far)`` gives
    the bytes to send back (None: close the connection at once); ``messages`` lists, per connection,
    every syslog message received."""

    def __init__(self, answer: Callable[[Frame, int], Optional[bytes]]) -> None:
        self.answer = answer
        self.messages: List[List[bytes]] = []
        self.most_unanswered = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)  # how soon close() is noticed
        self.uri = f"relp+tcp://127.0.0.1:{self._listener.getsockname()[1]}"
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._done.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            with conn:
                self._session(conn)

    def _session(self, conn: socket.socket) -> None:
        received: List[bytes] = []
        self.messages.append(received)
        buffer, answered = b"", 0
        conn.settimeout(5)
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            frames, buffer = parse(buffer + data)
            replies = b""
            for frame in frames:
                if frame.command == "syslog":
                    received.append(frame.data)
                    self.most_unanswered = max(self.most_unanswered, len(received) - answered)
                reply = self.answer(frame, len(received))
                if reply is None:  # gone: what was answered is sent, then the end (no reset)
                    conn.sendall(replies)
                    conn.shutdown(socket.SHUT_WR)
                    while conn.recv(65536):
                        pass
                    return
                if frame.command == "syslog":
                    answered += reply.count(b" rsp ")
                replies += reply
            conn.sendall(replies)

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)
        self._listener.close()


def answer_all(frame: Frame, _: int) -> Optional[bytes]:
    data = {"open": OPEN_OK, "syslog": b"200 OK", "close": b""}[frame.command]
    return encode(frame.txnr, "rsp", data)


@pytest.fixture
def receiver():
    made: List[FakeReceiver] = []

    def make(answer: Callable[[Frame, int], Optional[bytes]]) -> FakeReceiver:
        made.append(FakeReceiver(answer))
        return made[-1]

    yield make
    for fake in made:
        fake.close()


def test_a_session_cut_mid_batch_resends_only_the_unanswered(receiver, waits):
    sessions = []

    def cut_after_three(frame, count):
        if frame.command == "open":
            sessions.append(frame)
        if len(sessions) == 1 and frame.command == "syslog" and count > 3:
            return None  # the receiver dies with messages 4.. unanswered
        return answer_all(frame, count)

    fake = receiver(cut_after_three)
    batch = events(10)
    assert sink_for(fake.uri, sleep=waits).send(batch).delivered == 10
    first, second = fake.messages
    assert [m.rsplit(b"=", 1)[1] for m in second] == [str(i).encode() for i in range(3, 10)]
    assert len(first) >= 4 and len(waits) == 1


def test_a_refused_message_fails_the_batch_after_the_attempts(receiver, waits):
    def refuse_the_second(frame, count):
        if frame.command == "syslog" and count == 2:
            return encode(frame.txnr, "rsp", b"500 queue full")
        return answer_all(frame, count)

    fake = receiver(refuse_the_second)
    with pytest.raises(SinkError, match="refused a message: b'500 queue full'") as info:
        sink_for(fake.uri, sleep=waits, attempts=3).send(events(4))
    assert info.value.retryable and len(fake.messages) == 3 and len(waits) == 2


def test_a_receiver_that_never_answers_fails_the_batch(receiver, waits):
    fake = receiver(lambda frame, count: answer_all(frame, count) if frame.command == "open" else b"")
    with pytest.raises(SinkError, match=r"no complete response within 0.5 s \(HTTP timeout\)") as info:
        sink_for(fake.uri, sleep=waits, attempts=1, timeout=0.5).send(events(3))
    assert info.value.retryable and len(fake.messages[0]) == 3


def test_a_late_watchdog_fails_the_batch_in_the_same_words(receiver, waits, monkeypatch):
    """On a loaded host the socket's own timeout (the backstop) can fire before the watchdog cuts."""
    monkeypatch.setattr(deadline._watchdog, "add", lambda call, at: None)  # never cuts
    fake = receiver(lambda frame, count: answer_all(frame, count) if frame.command == "open" else b"")
    with pytest.raises(SinkError, match=r"no complete response within 0.5 s \(HTTP timeout\)"):
        sink_for(fake.uri, sleep=waits, attempts=1, timeout=0.5).send(events(3))


def test_a_stop_cuts_the_wait_for_answers(receiver):
    """One attempt: without the cut, the timeout would end it in a SinkError."""
    fake = receiver(lambda frame, count: answer_all(frame, count) if frame.command == "open" else b"")
    sink = sink_for(fake.uri, attempts=1, timeout=20)

    def stop_once_sent() -> None:
        while not (fake.messages and fake.messages[0]):
            time.sleep(0.01)
        stop.request()

    threading.Thread(target=stop_once_sent, daemon=True).start()
    try:
        with pytest.raises(stop.Stopped, match="relp receiver"):
            sink.send(events(3))
    finally:
        stop.reset()


@pytest.mark.parametrize(
    "reply",
    [
        b"500 required command not supported by client",
        b"200 OK\nrelp_version=0\ncommands=eventlog",
        b"200 OK",
    ],
)
def test_a_receiver_that_does_not_take_syslog_messages_gets_none(receiver, waits, reply):
    fake = receiver(lambda frame, count: encode(frame.txnr, "rsp", reply))
    with pytest.raises(SinkError, match="does not take syslog messages"):
        sink_for(fake.uri, sleep=waits, attempts=2).send(events(2))
    assert fake.messages == [[], []]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (b"7 rsp 6 200 OK\n", "sent rsp 7, not rsp 2"),
        (b"2 syslog 6 200 OK\n", "sent syslog 2, not rsp 2"),
        (b"0 serverclose 0\n", "the receiver closed the session"),
        (b"<13>1 hello\n", "not RELP"),
    ],
)
def test_a_receiver_that_breaks_the_protocol_fails_the_batch(receiver, reply, problem):
    fake = receiver(lambda frame, count: answer_all(frame, count) if frame.command == "open" else reply)
    with pytest.raises(SinkError, match=problem):
        sink_for(fake.uri, attempts=1).send(events(1))


def test_at_most_a_window_of_messages_is_unanswered(receiver):
    total = 3 * WINDOW + 5

    def answer_when_the_window_is_full(frame, count):
        if frame.command != "syslog":
            return answer_all(frame, count)
        held.append(frame.txnr)
        if len(held) < WINDOW and count < total:
            return b""
        replies = b"".join(encode(txnr, "rsp", b"200 OK") for txnr in held)
        held.clear()
        return replies

    held: List[int] = []
    fake = receiver(answer_when_the_window_is_full)
    assert sink_for(fake.uri).send(events(total)).delivered == total
    assert fake.most_unanswered == WINDOW and len(fake.messages[0]) == total


# --- a real rsyslogd with imrelp ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["relp", "relptls"])
def test_every_event_is_answered_and_stored_once(relp_rsyslog, name, caplog):
    caplog.set_level(logging.INFO, logger="forwarder.sinks.relp")
    batch = [*events(1000), Event("nl", 0, b"CEF:0|v|p|1|s|n|5|msg=a\nb\r\n12 <13>1 forged|cs6=x")]
    sink = sink_for(relp_rsyslog.uri(name), relp_rsyslog.ca_bundle)
    assert sink.send(batch).delivered == len(batch)
    assert sink.send(batch[:10]).delivered == 10  # a second batch, a second session
    sink.close()
    records = relp_rsyslog.stored(name)  # answered means written: nothing to wait for
    assert [r["msg"].encode() for r in records] == [e.body for e in batch + batch[:10]]
    assert {(r["hostname"], r["app_name"], r["msgid"], r["pri"]) for r in records} == {
        ("forwarder.test", "emailauth-audit", "audit", "109")
    }
    assert caplog.records == []  # each session ended cleanly too


def test_an_unknown_certificate_authority_fails_at_once(relp_rsyslog, waits):
    with pytest.raises(
        SinkError, match=r"relp receiver: TLS with localhost:\d+ failed: certificate not trusted"
    ) as info:
        sink_for(relp_rsyslog.uri("relptls"), sleep=waits).send(events(1))
    assert not info.value.retryable and waits == []


@pytest.mark.parametrize("name", ["relp", "relptls"])
def test_a_receiver_killed_mid_batch_loses_nothing(relp_rsyslog, waits, name):
    """The batch fails; sent again once the receiver is back (the next run does that), every event is
    stored, and only what the first try had stored is there twice."""
    batch = events(10_000)  # about half a second of rsyslog's work: time enough to land the kill in it
    sink = sink_for(relp_rsyslog.uri(name), relp_rsyslog.ca_bundle, attempts=2, sleep=waits)
    failure: List[BaseException] = []

    def send() -> None:
        try:
            sink.send(batch)
        except SinkError as exc:
            failure.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    relp_rsyslog.records(name, 300)  # mid-batch: the first 300 are in the file
    relp_rsyslog.kill()
    sender.join(timeout=60)
    assert failure and failure[0].retryable  # not every message was answered
    before = Counter(r["msg"] for r in relp_rsyslog.stored(name))
    assert 300 <= len(before) < len(batch) and max(before.values()) == 1

    relp_rsyslog.start()
    assert sink.send(batch).delivered == len(batch)
    after = Counter(r["msg"] for r in relp_rsyslog.stored(name))
    assert set(after) == {e.body.decode() for e in batch}
    assert {msg for msg, n in after.items() if n > 1} <= set(before) and max(after.values()) <= 2


def test_the_probe_opens_and_closes_a_session_and_sends_no_message(receiver):
    fake = receiver(answer_all)
    line = probe_sink(SinkSettings(uri=fake.uri))
    port = fake.uri.rsplit(":", 1)[1]
    assert line == (
        f"relp receiver 127.0.0.1:{port}: connected, plain TCP, "
        "a RELP session offering syslog opened and closed"
    )
    assert fake.messages == [[]]
