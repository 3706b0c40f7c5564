"""Why a connection failed, in one line a person can act on: a refused connection, no answer, a name
that does not resolve, a TLS failure, a connection closed without an answer, or anything else.

The HTTP stack wraps the cause several times over (requests' ConnectionError around urllib3's
MaxRetryError around NewConnectionError around the socket's ConnectionRefusedError), and its text
("Max retries exceeded", "HTTPConnectionPool(...)") says nothing a person can act on. ``of`` looks
through the wrapping for the cause; ``hint`` names what to check for it.
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass
from http.client import RemoteDisconnected
from typing import Iterator, List

REFUSED = "refused"  # something answered: nothing listens on that port
NO_ANSWER = "no-answer"  # nothing answered the connection, or the request, in time
DNS = "dns"
TLS = "tls"
CLOSED = "closed"  # connected, then closed (or reset) without an answer
OTHER = "other"

_TEXT_LIMIT = 200
_CUT = "no complete response"  # how forwarder.deadline words a call it cut
_CLOSED = (ConnectionResetError, ConnectionAbortedError, RemoteDisconnected, BrokenPipeError)


@dataclass(frozen=True)
class Cause:
    kind: str
    text: str  # one line, naming the host:port when known; never a library's wrapping


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it wraps: causes, contexts, urllib3's ``reason`` and exception args."""
    seen = set()
    todo: List[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = [getattr(current, "reason", None), current.__cause__, current.__context__, *current.args]
        todo.extend(e for e in wrapped if isinstance(e, BaseException))


def _is_timeout(exc: BaseException) -> bool:
    import requests
    import urllib3.exceptions as u3

    if isinstance(exc, u3.NewConnectionError):  # a subclass of ConnectTimeoutError, whatever it says
        return False
    return isinstance(exc, (requests.exceptions.Timeout, u3.TimeoutError, socket.timeout, TimeoutError))


def _tls_reason(chain: List[BaseException]) -> str:
    for exc in chain:
        if isinstance(exc, ssl.SSLCertVerificationError):
            return f"certificate not trusted ({exc.verify_message})"
    for exc in reversed(chain):
        if isinstance(exc, ssl.SSLError):
            return str(getattr(exc, "reason", None) or exc)[:_TEXT_LIMIT]
    return "handshake failed"


def of(exc: BaseException, where: str = "") -> Cause:
    """The cause of a failed call to ``where`` (host:port), from the exception it raised."""
    import requests
    import urllib3.exceptions as u3

    chain = list(_chain(exc))
    at = where or "the server"
    if any(isinstance(e, (requests.exceptions.ProxyError, u3.ProxyError)) for e in chain):
        at = f"the proxy (HTTPS_PROXY) to {at}"  # the proxy failed, not the peer behind it
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return Cause(REFUSED, f"{at} refused the connection (nothing listens on that port)")
    if any(isinstance(e, socket.gaierror) for e in chain):
        host = where.rsplit(":", 1)[0] if where else "the host name"
        return Cause(DNS, f"{host} does not resolve (DNS)")
    if any(isinstance(e, (ssl.SSLError, requests.exceptions.SSLError)) for e in chain):
        return Cause(TLS, f"TLS with {at} failed: {_tls_reason(chain)}")
    if any(_is_timeout(e) for e in chain):
        connecting = any(
            isinstance(e, (requests.exceptions.ConnectTimeout, u3.ConnectTimeoutError))
            and not isinstance(e, u3.NewConnectionError)
            for e in chain
        )
        if connecting:
            return Cause(NO_ANSWER, f"no answer from {at} to the connection within the HTTP timeout")
        cut = next((str(e) for e in chain if _CUT in str(e)), "")
        if cut:  # forwarder.deadline's words: how long, and the step it was cut during
            return Cause(NO_ANSWER, f"{at}: {_CUT}{cut.partition(_CUT)[2]}")
        return Cause(NO_ANSWER, f"{at}: {_CUT} within the HTTP timeout")
    if any(isinstance(e, _CLOSED) for e in chain):
        return Cause(CLOSED, f"{at} closed the connection without an answer")
    innermost = chain[-1]
    text = " ".join(str(innermost).split())[:_TEXT_LIMIT]
    return Cause(OTHER, f"{type(innermost).__name__} from {at}" + (f": {text}" if text else ""))


def explain(who: str, cause: Cause, attempts: int, address: str, trust: str = "") -> str:
    """``Splunk HEC: 127.0.0.1:1 refused the connection (...) after 5 attempts; check ...``: the one line
    for a peer ``who`` could not be reached (see ``hint`` for ``address`` and ``trust``)."""
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return f"{who}: {cause.text}{tries}; {hint(cause.kind, address, trust)}"


def hint(kind: str, address: str, trust: str = "") -> str:
    """What to check for a cause of ``kind``: ``address`` names the variable holding the host and port
    (FORWARDER_SINK, FORWARDER_API_URL), ``trust`` the one holding the CA bundle, if any."""
    if kind == REFUSED:
        return f"check the host and port in {address}, and that the service runs"
    if kind == DNS:
        return f"check the host name in {address}"
    if kind == TLS:
        return f"check {trust}, or that {address} names a TLS port" if trust else f"check {address}"
    if kind == NO_ANSWER:
        return f"check {address}, a firewall on the way, and FORWARDER_HTTP_TIMEOUT"
    if kind == CLOSED:
        return f"check that {address} names the right port and protocol (plain or TLS)"
    return f"check {address}"
