"""RELP, the Reliable Event Logging Protocol of rsyslog's librelp: ``relp+tcp://host:2514`` and
``relp+tls://host:2514``. The one syslog transport with proof of delivery: the receiver answers every
message, and a batch counts as delivered only once every message in it was answered ``200``.

Each batch has a session of its own. Every frame is ``<txnr> <command> <length>[ <data>]\\n``, the
transaction number counting from 1 in the session:

* ``open`` with our offers (``relp_version``, ``relp_software``, ``commands=syslog``); the receiver's
  ``rsp`` must be ``200`` and offer ``syslog`` among its commands.
* ``syslog`` with one message each, at most ``WINDOW`` of them unanswered at a time; each ``rsp``
  answers the oldest unanswered one (RELP answers in order).
* ``close`` and its ``rsp``; then the receiver ends the connection (librelp sends a last
  ``serverclose`` hint) and the sink reads up to that end before closing, so no reset is provoked.
  Every message was answered by then: a failure there costs nothing.

Messages are the syslog sink's (RFC 5424 header, then the event body; no octet counting, the frame
carries the length), under the same size limit (FORWARDER_SYSLOG_MAX_MESSAGE; imrelp's maxDataSize
defaults to rsyslog's maxMessageSize), over the same TLS.

Failures: a refused, reset or timed-out connection, an answer other than 200, bytes that are not RELP,
the receiver closing the session: the unanswered messages are sent again on a new session (with the
backoff of ``forwarder.retry``); the answered ones are not. When the attempts run out the batch fails
(retryable), the run does not move past it, and the next run sends the whole batch again: its answered
part arrives twice (at least once; the event id, ``cs6`` in CEF, tells the copies apart).

What an answer proves is the receiver's: rsyslog's imrelp answers once a message is in its queue, so a
receiver crash loses nothing answered only when that queue is on disk or direct.
"""

from __future__ import annotations

import logging
import re
import socket
from collections import deque
from typing import Deque, Dict, List, NamedTuple, Tuple
from urllib.parse import SplitResult

from .. import __version__, retry
from .settings import SinkSettings
from .syslog import SyslogOptions, SyslogSink, end_cleanly
from .syslog import address as stream_address

log = logging.getLogger(__name__)

DEFAULT_PORTS = {"relp+tcp": 2514, "relp+tls": 2514}
EXAMPLE = "relp+tls://siem.example.com:2514 or relp+tcp://siem.example.com:2514"
WINDOW = 128  # messages sent and not yet answered, at most (librelp's own default)
MAX_TXNR = 999_999_999  # after it, transaction numbers start again at 1
MAX_RESPONSE_BYTES = 65_536  # an answer is a status line and a few offers: anything longer is not RELP
OFFERS = f"relp_version=0\nrelp_software=emailauth-audit-forwarder,{__version__}\ncommands=syslog".encode()

_FRAME = re.compile(rb"([0-9]{1,9}) ([A-Za-z]{1,32}) ([0-9]{1,9})([ \n])")
# what the start of a frame may look like before its header is complete
_HEADER_PREFIX = re.compile(rb"[0-9]{0,9}|[0-9]{1,9} [A-Za-z]{0,32}|[0-9]{1,9} [A-Za-z]{1,32} [0-9]{0,9}")


class Frame(NamedTuple):
    txnr: int
    command: str
    data: bytes


def encode(txnr: int, command: str, data: bytes = b"") -> bytes:
    """One RELP frame; the data part and its space only when there is data."""
    head = f"{txnr} {command} {len(data)}".encode("ascii")
    return head + (b" " + data if data else b"") + b"\n"


def _not_relp(data: bytes) -> retry.TryAgain:
    return retry.TryAgain(f"the receiver sent bytes that are not RELP: {data[:60]!r}")


def parse(buffer: bytes) -> Tuple[List[Frame], bytes]:
    """The complete frames at the start of ``buffer``, and the rest (the start of the next frame);
    TryAgain when the bytes cannot be RELP."""
    frames: List[Frame] = []
    at = 0
    while at < len(buffer):
        header = _FRAME.match(buffer, at)
        if header is None:
            if _HEADER_PREFIX.fullmatch(buffer, at):
                break
            raise _not_relp(buffer[at:])
        length = int(header[3])
        if length > MAX_RESPONSE_BYTES or (length == 0) != (header[4] == b"\n"):
            raise _not_relp(buffer[at:])
        end = header.end() + length
        if length and len(buffer) <= end:
            break
        if length and buffer[end : end + 1] != b"\n":
            raise _not_relp(buffer[at:])
        frames.append(Frame(int(header[1]), header[2].decode("ascii"), buffer[header.end() : end]))
        at = end + 1 if length else end
    return frames, buffer[at:]


def status(data: bytes) -> Tuple[bool, List[bytes]]:
    """(answered 200, the offer lines after the status line) of an ``rsp`` frame's data."""
    line, _, rest = data.partition(b"\n")
    code = line.split(b" ", 1)[0]
    return code == b"200", rest.split(b"\n") if rest else []


def offers_syslog(lines: List[bytes]) -> bool:
    """Whether the receiver's offers include a ``relp_version`` and the ``syslog`` command."""
    offers = dict(line.partition(b"=")[::2] for line in lines)
    return b"relp_version" in offers and b"syslog" in offers.get(b"commands", b"").split(b",")


class Session:
    """One RELP session over a connected socket: transaction numbers out, answers in, in order."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._next_txnr = 1
        self._buffer = b""
        self._answers: Deque[Frame] = deque()
        self._server_closed = False

    def _frame(self, command: str, data: bytes = b"") -> Tuple[int, bytes]:
        txnr = self._next_txnr
        self._next_txnr = txnr % MAX_TXNR + 1
        return txnr, encode(txnr, command, data)

    def _answer(self, txnr: int) -> Frame:
        """The answer to transaction ``txnr``, the oldest one unanswered."""
        while not self._answers:
            if self._server_closed:
                raise retry.TryAgain("the receiver closed the session")
            data = self._sock.recv(65536)
            if not data:
                raise retry.TryAgain("the receiver ended the connection")
            frames, self._buffer = parse(self._buffer + data)
            for frame in frames:
                if frame.txnr:
                    self._answers.append(frame)
                elif frame.command == "serverclose":  # answers before it still count; no more will come
                    self._server_closed = True
                # other hints (transaction 0) only hint
        answer = self._answers.popleft()
        if answer.command != "rsp" or answer.txnr != txnr:
            raise retry.TryAgain(f"the receiver sent {answer.command} {answer.txnr}, not rsp {txnr}")
        return answer

    def open(self) -> None:
        txnr, data = self._frame("open", OFFERS)
        self._sock.sendall(data)
        ok, offers = status(self._answer(txnr).data)
        if not ok or not offers_syslog(offers):
            raise retry.TryAgain("the receiver refused the session or does not take syslog messages")

    def send(self, unanswered: Dict[int, bytes]) -> None:
        """Every message of ``unanswered``, removing each as the receiver answers it 200."""
        todo = deque(unanswered)
        waiting: Deque[Tuple[int, int]] = deque()  # (txnr, message key), oldest first
        while todo or waiting:
            frames = []
            while todo and len(waiting) < WINDOW:
                key = todo.popleft()
                txnr, data = self._frame("syslog", unanswered[key])
                frames.append(data)
                waiting.append((txnr, key))
            if frames:
                self._sock.sendall(b"".join(frames))
            self._settle(waiting, unanswered)

    def _settle(self, waiting: Deque[Tuple[int, int]], unanswered: Dict[int, bytes]) -> None:
        """Wait for the next answer, then take every other one already read, before sending more."""
        while True:
            txnr, key = waiting.popleft()
            answer = self._answer(txnr)
            if not status(answer.data)[0]:
                raise retry.TryAgain(f"the receiver refused a message: {answer.data[:80]!r}")
            del unanswered[key]
            if not (waiting and self._answers):
                return

    def close(self) -> None:
        txnr, data = self._frame("close")
        self._sock.sendall(data)
        self._answer(txnr)


def address(parts: SplitResult) -> Tuple[str, int, bool]:
    """(host, port, use_tls) of a RELP URI; ValueError naming FORWARDER_SINK."""
    return stream_address(parts, DEFAULT_PORTS, EXAMPLE, "RELP")


class RelpSink(SyslogSink):
    name = "relp"

    def _address(self, parts: SplitResult) -> Tuple[str, int, bool]:
        return address(parts)

    def _deliver(self, messages: List[bytes]) -> None:
        """Every message answered 200, over as many sessions as it takes."""
        unanswered = dict(enumerate(messages))

        def over(sock: socket.socket) -> None:
            session = Session(sock)
            session.open()
            session.send(unanswered)
            try:
                session.close()
                end_cleanly(sock, receiver_first=True)
            except (OSError, retry.TryAgain) as exc:  # every message was answered: nothing is lost
                problem = f"{type(exc).__name__}: {exc}"[:300]
                log.info("the RELP session did not end cleanly", extra={"error": problem})

        self._retried(over)

    def _greet(self, sock: socket.socket) -> str:
        session = Session(sock)
        session.open()
        session.close()
        end_cleanly(sock, receiver_first=True)
        return "a RELP session offering syslog opened and closed"


def validate(settings: SinkSettings) -> None:
    address(settings.address)


open_sink = RelpSink
Options = SyslogOptions
