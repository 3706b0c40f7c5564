"""The cause of a failed connection, from what the HTTP stack really raises over loopback."""

from __future__ import annotations

import contextlib
import socketserver
import ssl

import pytest
import requests

from forwarder import causes, deadline, http
from tests.receivers.loopback import LoopbackServer
from tests.receivers.silent import Silent, closed_port


def failure(url: str) -> BaseException:
    session = http.new_session()
    try:
        deadline.request(session, "POST", url, data=b"{}", timeout=(1, 1), deadline_s=1)
    except requests.RequestException as exc:
        return exc
    finally:
        session.close()
    raise AssertionError(f"{url} answered")


class Hangup(LoopbackServer):
    """Reads the request, then closes the connection without a word."""

    def __init__(self) -> None:
        super().__init__(_HangupHandler)


class _HangupHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.rfile.readline()


class TlsServer(LoopbackServer):
    """Offers a certificate signed by a CA the client does not know."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        super().__init__(_TlsHandler)


class _TlsHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        context: ssl.SSLContext = self.server.owner.context  # type: ignore[attr-defined]
        with contextlib.suppress(ssl.SSLError, OSError):  # the client gives up on the handshake
            context.wrap_socket(self.request, server_side=True).close()


def test_a_closed_port_is_a_refusal_naming_host_and_port():
    with closed_port() as port:
        cause = causes.of(failure(f"http://127.0.0.1:{port}/x"), f"127.0.0.1:{port}")
    assert cause == causes.Cause(
        causes.REFUSED, f"127.0.0.1:{port} refused the connection (nothing listens on that port)"
    )


def test_a_peer_that_takes_the_connection_and_never_answers_is_no_answer():
    with Silent() as peer:
        cause = causes.of(failure(peer.url), f"127.0.0.1:{peer.port}")
    assert cause.kind == causes.NO_ANSWER and "refused" not in cause.text
    assert cause.text == f"127.0.0.1:{peer.port}: no complete response within 1 s (HTTP timeout)"


def test_a_read_timeout_alone_is_no_answer_too():
    # deadline.request sets the read timeout past the deadline, so this is the backstop's wording
    cause = causes.of(requests.exceptions.ReadTimeout("Read timed out. (read timeout=60)"), "h:1")
    assert cause == causes.Cause(causes.NO_ANSWER, "h:1: no complete response within the HTTP timeout")


def test_a_proxy_that_refuses_is_named_not_the_peer_behind_it():
    session = http.new_session()
    with closed_port() as port:
        session.proxies = {"http": f"http://127.0.0.1:{port}"}
        try:
            session.get("http://api.example.com/x", timeout=1)
        except requests.RequestException as exc:
            cause = causes.of(exc, "api.example.com:80")
        finally:
            session.close()
    assert cause == causes.Cause(
        causes.REFUSED,
        "the proxy (HTTPS_PROXY) to api.example.com:80 refused the connection (nothing listens on that port)",
    )


def test_a_name_that_does_not_resolve_is_dns():
    cause = causes.of(failure("http://nowhere.invalid:8088/x"), "nowhere.invalid:8088")
    assert cause == causes.Cause(causes.DNS, "nowhere.invalid does not resolve (DNS)")


def test_a_connection_closed_without_an_answer():
    with Hangup() as peer:
        cause = causes.of(failure(f"http://127.0.0.1:{peer.port}/x"), f"127.0.0.1:{peer.port}")
    assert cause == causes.Cause(
        causes.CLOSED, f"127.0.0.1:{peer.port} closed the connection without an answer"
    )


def test_an_unknown_certificate_authority_is_tls_with_the_reason(tls, monkeypatch):
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")  # the client trusts only the system's CAs
    with TlsServer(tls) as server:
        cause = causes.of(failure(f"https://127.0.0.1:{server.port}/x"), f"127.0.0.1:{server.port}")
    assert cause.kind == causes.TLS
    assert cause.text.startswith(f"TLS with 127.0.0.1:{server.port} failed: certificate not trusted (")


def test_anything_else_names_the_innermost_exception_only():
    wrapped = requests.exceptions.ConnectionError(ValueError("odd"))
    assert causes.of(wrapped, "h:1") == causes.Cause(causes.OTHER, "ValueError from h:1: odd")


@pytest.mark.parametrize(
    "kind, expected",
    [
        (causes.REFUSED, "check the host and port in FORWARDER_SINK, and that the service runs"),
        (causes.DNS, "check the host name in FORWARDER_SINK"),
        (causes.TLS, "check FORWARDER_SINK_CA_BUNDLE, or that FORWARDER_SINK names a TLS port"),
        (causes.NO_ANSWER, "check FORWARDER_SINK, a firewall on the way, and FORWARDER_HTTP_TIMEOUT"),
        (causes.CLOSED, "check that FORWARDER_SINK names the right port and protocol (plain or TLS)"),
        (causes.OTHER, "check FORWARDER_SINK"),
    ],
)
def test_each_cause_names_what_to_check(kind, expected):
    assert causes.hint(kind, "FORWARDER_SINK", "FORWARDER_SINK_CA_BUNDLE") == expected
