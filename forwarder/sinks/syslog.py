"""Syslog over TCP or TLS: ``syslog+tcp://host:514`` and ``syslog+tls://host:6514``.

Every event is one RFC 5424 message, framed by octet counting (``<length> <message>``, RFC 6587
section 3.4.1 and RFC 5425 section 4.3): the receiver reads exactly that many bytes, so no value
(a newline in a CEF field, a 10 kB JSON body) can split a record or forge another one.

* Header: ``<109>1 <created_at> <hostname> emailauth-audit - audit - ``: facility 13 (log audit),
  severity 5 (notice); the timestamp is the event's ``created_at`` (UTC, microseconds); the hostname
  is this machine's name (``-`` when unknown). No structured data and no BOM: CEF and SIEM syslog
  inputs expect the message to start with ``CEF:`` or ``{``.
* Message: the event body as it is: a CEF line, or the JSON of an ecs/ocsf/raw event.
* Size: a message over ``max_message_bytes`` (default 8192, RFC 5425's "SHOULD accept" size and
  rsyslog's default ``maxMessageSize``) is not sent but returned as a rejection (quarantine): a
  receiver with a smaller limit truncates it and, in some configurations, reads the rest as a new
  record. Raise both limits together.
* TLS: the server certificate is checked against ``settings.ca_bundle`` (a PEM file) or the system
  CAs, and its name against the URI's host; TLS 1.2 or newer. ``verify_tls=false`` turns checking
  off (test set-ups only).
* Failures: refused connections, resets and timeouts retry the whole batch on a new connection with
  ``forwarder.retry`` backoff; when the attempts run out the SinkError is retryable. A certificate
  problem is not retried. An attempt, connection to end, has the timeout in all (the HTTP deadline
  watchdog, ``forwarder.deadline``), and a stop request cuts it.

Delivery semantics, honestly: syslog over TCP has no application-level acknowledgement. The only proof
is a clean end: each batch has a connection of its own, which the sink ends (TLS close_notify, then its
write side) and whose end it waits for, the receiver's close_notify or end of stream, before the batch
counts as delivered. A receiver ends its side only after reading ours, so that proves it read every
byte; not that it stored them. A reset or no end within the timeout fails the batch, which is sent
again (the event id, ``cs6`` in CEF, lets a SIEM drop the duplicates). Where a read is not proof
enough, use RELP (``forwarder.sinks.relp``) or a sink with acknowledgements.
"""

from __future__ import annotations

import select
import socket
import ssl
from dataclasses import dataclass
from typing import Callable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import SplitResult

from .. import causes, deadline, retry
from ..errors import SinkError
from ..events import Event, SendResult
from ..kinds import Integer
from ..timeutil import format_us
from ..variables import Variable
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, reject_oversized
from .settings import HOST, SinkOptions, SinkSettings, option

DEFAULT_PORTS = {"syslog+tcp": 514, "syslog+tls": 6514}
EXAMPLE = "syslog+tls://siem.example.com:6514 or syslog+tcp://siem.example.com:514"
PRI = 13 * 8 + 5  # facility log audit, severity notice
APP_NAME = "emailauth-audit"
MSG_ID = "audit"


@dataclass(frozen=True)
class SyslogOptions(SinkOptions):
    """The syslog and RELP sinks' own settings."""

    hostname: Optional[str] = option(HOST)  # HOSTNAME; None: this host's name
    max_message_bytes: int = option(
        Variable(
            "FORWARDER_SYSLOG_MAX_MESSAGE",
            "largest syslog message in bytes (syslog and RELP sinks); larger events go to quarantine "
            "(raise rsyslog `maxMessageSize` to match)",
            Integer(480, 16 * 1024 * 1024, unit="bytes"),
            "8192",
        )
    )  # larger: quarantined


Options = SyslogOptions


def address(
    parts: SplitResult,
    default_ports: Mapping[str, int] = DEFAULT_PORTS,
    example: str = EXAMPLE,
    what: str = "syslog",
) -> Tuple[str, int, bool]:
    """(host, port, use_tls) of a ``<what>+tcp``/``<what>+tls`` URI; ValueError naming FORWARDER_SINK."""
    scheme = parts.scheme.lower()
    if scheme not in default_ports:
        raise ValueError(f"FORWARDER_SINK for {what} must look like {example}")
    if parts.path.strip("/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"FORWARDER_SINK for {what} takes a host and a port only, like {example}")
    try:
        port = parts.port or default_ports[scheme]
    except ValueError:
        raise ValueError(f"FORWARDER_SINK has an invalid port; use {example}") from None
    if not parts.hostname:
        raise ValueError(f"FORWARDER_SINK names no host; use {example}")
    return parts.hostname, port, scheme.endswith("+tls")


def header_hostname(name: str) -> str:
    """RFC 5424 HOSTNAME: 1-255 printable ASCII characters without spaces, or ``-``."""
    cleaned = "".join(char for char in name if 33 <= ord(char) <= 126)[:255]
    return cleaned or "-"


def message(event: Event, hostname: str) -> bytes:
    """One RFC 5424 message: header, then the event body."""
    head = f"<{PRI}>1 {format_us(event.time_us)} {hostname} {APP_NAME} - {MSG_ID} - ".encode("ascii")
    return head + event.body


def frame(data: bytes) -> bytes:
    """Octet counting: the length in decimal, a space, the message."""
    return str(len(data)).encode("ascii") + b" " + data


def tls_context(settings: SinkSettings) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=settings.ca_bundle)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if not settings.verify_tls:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def connect(host: str, port: int, context: Optional[ssl.SSLContext], timeout: float) -> socket.socket:
    """A new connection to ``host:port``, TLS when ``context`` is given (SSLCertVerificationError when
    the receiver's certificate does not check out), which the watchdog of the call in progress
    (``deadline.watching``) cuts from the start."""
    sock = socket.create_connection((host, port), timeout=timeout)
    call = deadline.current()
    if call is not None:
        call.attach_descriptor(sock, None)  # the descriptor outlives the TLS layer put over the socket
    if context is None:
        return sock
    try:
        return context.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def end_cleanly(sock: socket.socket, *, receiver_first: bool = False) -> None:
    """End a connection so that no byte sent is lost, and close it. Each wait is bounded by the
    socket's timeout; the caller's watchdog bounds them all.

    Our end first (TLS: a close_notify; then the write side closed), unless the receiver is ending it
    already (``receiver_first``); then everything the receiver still sends is read up to its own end:
    its close_notify (RFC 5425 section 4.4) and end of stream. Closing a socket with unread bytes in it
    (a TLS 1.3 receiver's session tickets) makes the kernel send a reset, and a reset makes the
    receiver's kernel drop what the receiver had not read yet: a receiver that reads late lost the end
    of every batch. A receiver ends its side only once it has read ours, so its end proves that it read
    everything. OSError (a reset, a timeout) when it did not end cleanly.
    """
    try:
        if not receiver_first:
            if isinstance(sock, ssl.SSLSocket):
                _send_close_notify(sock)
            sock.shutdown(socket.SHUT_WR)  # an SSLSocket is a plain socket from here on
        while sock.recv(65536):
            pass
    finally:
        sock.close()


def _send_close_notify(sock: ssl.SSLSocket) -> None:
    """Send our close_notify without waiting for the receiver's: that comes with whatever else the
    receiver still sends (a RELP server's last hint), read as bytes up to the end of the stream."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        while True:
            try:
                sock.unwrap()  # the close_notify, then an attempt to read the receiver's
                return
            except (ssl.SSLWantReadError, ssl.SSLEOFError):  # ours is out; the receiver's comes later
                return
            except ssl.SSLWantWriteError:  # a full send buffer: the receiver is still reading the batch
                if not select.select([], [sock], [], timeout)[1]:
                    raise TimeoutError("the receiver read nothing more of the batch") from None
    finally:
        sock.settimeout(timeout)


class SyslogSink:
    name = "syslog"

    def __init__(
        self,
        settings: SinkSettings,
        retry_policy: Optional[retry.RetryPolicy] = None,
        max_message_bytes: Optional[int] = None,  # None: FORWARDER_SYSLOG_MAX_MESSAGE's
    ) -> None:
        self.host, self.port, self.tls = self._address(settings.address)
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        self.max_batch_bytes = settings.batch_bytes or DEFAULT_MAX_BYTES
        self.max_in_flight = 1  # one batch at a time, in order
        options = settings.options_of(SyslogOptions)
        self.max_message_bytes = max_message_bytes or options.max_message_bytes
        self.hostname = header_hostname(options.hostname or socket.gethostname())
        self._context = tls_context(settings) if self.tls else None
        self._timeout = settings.timeout_seconds
        self._retry = retry_policy or retry.RetryPolicy(attempts=settings.max_attempts)

    def _address(self, parts: SplitResult) -> Tuple[str, int, bool]:
        return address(parts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(host={self.host!r}, port={self.port}, tls={self.tls})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        _, messages, rejected = reject_oversized(
            batch, self._message, self.max_message_bytes, "syslog message"
        )
        if messages:
            self._deliver(messages)
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _message(self, event: Event) -> bytes:
        return message(event, self.hostname)

    def _deliver(self, messages: List[bytes]) -> None:
        """Every message over a connection of its own, ended cleanly: the batch's only proof."""
        payload = b"".join(frame(data) for data in messages)

        def over(sock: socket.socket) -> None:
            sock.sendall(payload)
            end_cleanly(sock)

        self._retried(over)

    def _retried(self, attempt_over: Callable[[socket.socket], None]) -> None:
        """``attempt_over`` a new connection, again on a new one after a refusal, a reset, a timeout or a
        TryAgain, as ``forwarder.retry`` says; then a retryable SinkError. A certificate problem is not
        retried. Each attempt, connection to end, has FORWARDER_HTTP_TIMEOUT in all, and a stop request
        cuts it (stop.Stopped): the batch stays undelivered."""
        where = f"{self.name} receiver {self.host}:{self.port}"

        def attempt() -> None:
            what = f"delivery to the {where}"
            with deadline.watching(what, self._timeout) as call:
                try:  # the socket's timeout only backs the watchdog up, as forwarder.deadline.request's
                    with connect(self.host, self.port, self._context, self._timeout + 1.0) as sock:
                        attempt_over(sock)
                except ssl.SSLCertVerificationError as exc:
                    cause = causes.of(exc, f"{self.host}:{self.port}")
                    raise SinkError(self._unreachable(cause, 1)) from exc
                except socket.timeout as exc:  # past the deadline, the watchdog late (a loaded host)
                    if not call.cut.is_set():
                        raise TimeoutError(deadline.cut_message(call, what, self._timeout)) from exc
                except (OSError, retry.TryAgain):
                    if not call.cut.is_set():
                        raise
            if call.cut.is_set():  # whatever the attempt made of its socket being shut, it was cut
                raise TimeoutError(deadline.cut_message(call, what, self._timeout))

        def give_up(failure: retry.Failure) -> None:
            if failure.cause is not None:
                raise SinkError(self._unreachable(failure.cause, failure.attempts), True)
            raise SinkError(
                f"{where} still failing after {failure.attempts} attempts: {failure.problem}", retryable=True
            )

        retry.call(self._retry, attempt, give_up, f"write to the {where}", where=f"{self.host}:{self.port}")

    def _unreachable(self, cause: causes.Cause, attempts: int) -> str:
        return causes.explain(
            f"{self.name} receiver", cause, attempts, "FORWARDER_SINK", "FORWARDER_SINK_CA_BUNDLE"
        )

    def probe(self) -> str:
        """For `check`: a connection (with its TLS handshake, the certificate verified) that ``_greet``
        uses and ends cleanly, no message written."""
        found: List[str] = []

        def over(sock: socket.socket) -> None:
            found.append(
                f"TLS verified ({sock.version()})" if isinstance(sock, ssl.SSLSocket) else "plain TCP"
            )
            found.append(self._greet(sock))

        self._retried(over)
        return f"{self.name} receiver {self.host}:{self.port}: connected, " + ", ".join(filter(None, found))

    def _greet(self, sock: socket.socket) -> str:
        """What the protocol proves before any message, the connection then ended cleanly: syslog has
        nothing to say."""
        end_cleanly(sock)
        return "ended cleanly"

    def close(self) -> None:
        """Nothing to release: each batch had a connection of its own, ended in ``send``."""


def validate(settings: SinkSettings) -> None:
    address(settings.address)


open_sink = SyslogSink
