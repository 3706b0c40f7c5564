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
* Failures: refused connections, resets and timeouts close the connection and retry the whole batch
  on a new one with ``forwarder.retry`` backoff; when the attempts run out the SinkError is
  retryable. A certificate problem is not retried.

Delivery semantics, honestly: syslog over TCP has no application-level acknowledgement. ``send``
returns once every byte was handed to the kernel (TLS: encrypted and handed over), not once the
receiver stored it. Before each batch the sink checks whether the receiver closed the connection
(a restart between runs or batches) and reconnects first, so that common case loses nothing; a
receiver that dies while records are in flight can lose them silently, and a batch re-sent after an
error can arrive twice (the event id, ``cs6`` in CEF, lets a SIEM drop duplicates). Where that is
not good enough, use a sink with acknowledgements (HEC with acks, Elasticsearch) or a local relay
that speaks RELP.
"""

from __future__ import annotations

import select
import socket
import ssl
from typing import Optional, Sequence, Tuple
from urllib.parse import urlsplit

from .. import retry
from ..errors import SinkError
from ..events import Event, SendResult
from ..timeutil import format_us
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, reject_oversized
from .settings import SinkSettings

DEFAULT_PORTS = {"syslog+tcp": 514, "syslog+tls": 6514}
DEFAULT_MAX_MESSAGE_BYTES = 8192
PRI = 13 * 8 + 5  # facility log audit, severity notice
APP_NAME = "emailauth-audit"
MSG_ID = "audit"


def address(uri: str) -> Tuple[str, int, bool]:
    """(host, port, use_tls) of a syslog URI; ValueError naming FORWARDER_SINK."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    example = "syslog+tls://siem.example.com:6514 or syslog+tcp://siem.example.com:514"
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"FORWARDER_SINK for syslog must look like {example}")
    if parts.path.strip("/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"FORWARDER_SINK for syslog takes a host and a port only, like {example}")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise ValueError(f"FORWARDER_SINK has an invalid port; use {example}") from None
    if not parts.hostname:
        raise ValueError(f"FORWARDER_SINK names no host; use {example}")
    return parts.hostname, port, scheme == "syslog+tls"


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


def _peer_closed(sock: socket.socket, timeout: float) -> bool:
    """True when the receiver closed its side. A syslog receiver never talks, so anything readable is
    the end of the stream, an error, or (TLS 1.3) a session ticket, which the TLS layer consumes."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    sock.settimeout(0)
    try:
        sock.recv(1)
    except (ssl.SSLWantReadError, BlockingIOError):
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(timeout)
    return True  # end of stream, or bytes a receiver should not send: start a fresh connection


class SyslogSink:
    name = "syslog"

    def __init__(
        self,
        settings: SinkSettings,
        retry_policy: Optional[retry.RetryPolicy] = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.host, self.port, self.tls = address(settings.uri)
        self.max_batch_events = settings.batch_events or DEFAULT_MAX_EVENTS
        self.max_batch_bytes = settings.batch_bytes or DEFAULT_MAX_BYTES
        self.max_in_flight = 1  # one connection, in order
        self.max_message_bytes = max_message_bytes
        self.hostname = header_hostname(settings.host or socket.gethostname())
        self._context = tls_context(settings) if self.tls else None
        self._timeout = settings.timeout_seconds
        self._retry = retry_policy or retry.RetryPolicy(attempts=settings.max_attempts)
        self._sock: Optional[socket.socket] = None

    def __repr__(self) -> str:
        return f"SyslogSink(host={self.host!r}, port={self.port}, tls={self.tls})"

    def send(self, batch: Sequence[Event]) -> SendResult:
        _, messages, rejected = reject_oversized(
            batch, self._message, self.max_message_bytes, "syslog message"
        )
        if messages:
            self._write(b"".join(frame(data) for data in messages))
        return SendResult(delivered=len(batch) - len(rejected), rejected=rejected)

    def _message(self, event: Event) -> bytes:
        return message(event, self.hostname)

    def _write(self, payload: bytes) -> None:
        where = f"syslog receiver {self.host}:{self.port}"

        def attempt() -> None:
            try:
                self._connected().sendall(payload)
            except ssl.SSLCertVerificationError as exc:
                self.close()
                raise SinkError(f"TLS with the {where} failed: {exc}") from exc
            except OSError:  # refused, reset, broken pipe, timeout: retried on a new connection
                self.close()
                raise

        def give_up(failure: retry.Failure) -> None:
            raise SinkError(
                f"{where} still failing after {failure.attempts} attempts: {failure.problem}", retryable=True
            )

        retry.call(self._retry, attempt, give_up, f"write to the {where}")

    def _connected(self) -> socket.socket:
        """The open connection, or a new one when there is none or the receiver closed it."""
        if self._sock is not None and _peer_closed(self._sock, self._timeout):
            self.close()
        if self._sock is None:
            sock = socket.create_connection((self.host, self.port), timeout=self._timeout)
            if self._context is not None:
                try:
                    sock = self._context.wrap_socket(sock, server_hostname=self.host)
                except BaseException:
                    sock.close()
                    raise
            self._sock = sock
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            sock, self._sock = self._sock, None
            sock.close()


def validate(settings: SinkSettings) -> None:
    address(settings.uri)


def open_syslog(settings: SinkSettings) -> SyslogSink:
    return SyslogSink(settings, max_message_bytes=settings.syslog_max_message_bytes)
