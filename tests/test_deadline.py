"""A peer that trickles its side of a handshake (a TLS server's first record, a SOCKS5 proxy's reply) a
byte every 0.2 s holds a call only until its total deadline or a stop request, not until the trickle
ends (~10 s later): directly, inside a CONNECT tunnel (through an HTTP proxy, and inside TLS with an
HTTPS proxy), with an HTTPS proxy itself, with a SOCKS5 proxy and behind one. The cut names the
step and the host it stalled at, never the proxy's credentials.

The socket timeouts are longer than the whole trickle: Python bounds a TLS handshake as a whole by
the socket's timeout (the connect timeout), a SOCKS negotiation only per read. So only the watchdog
can end these calls before the trickle does.

Order, not time, is asserted: the call must have returned before the trickling peer came to its last
byte (the peer sets ``finished`` before sending it, so a call only the trickle's end freed sees it).

A call cut at its deadline after its answer was read whole never shuts down the socket of the
connection it handed back to the pool: with a session shared by threads, another call may already be
reading its own answer on it.
"""

from __future__ import annotations

import contextlib
import http.server as http_server
import threading
from typing import Dict, Iterator, List, Tuple

import pytest

from forwarder import deadline, http, stop
from forwarder import http as forwarder_http
from tests.receivers.forward_proxy import ForwardProxy, behind, direct
from tests.receivers.loopback import LoopbackServer
from tests.receivers.trickling_handshake import SOCKS5_OPENING, TLS_OPENING, TricklingHandshake

TIMEOUT = (60.0, 60.0)  # connect (a handshake's) and read
SECRET = "pr0xy-s3cret"
ORIGIN = "origin.invalid"  # behind a proxy, never resolved here: the proxy never gets that far


@pytest.fixture(autouse=True)
def no_stop_left():
    yield
    stop.reset()


def get(url: str, deadline_s: float) -> None:
    session = http.new_session()
    http.pin_environment(session, url)
    deadline.request(session, "GET", url, timeout=TIMEOUT, deadline_s=deadline_s)


@contextlib.contextmanager
def trickled(kind: str, request: pytest.FixtureRequest) -> Iterator[Tuple[TricklingHandshake, str, str]]:
    """A handshake trickled the way ``kind`` says: the peer, the URL to GET, the step it stalls at."""
    monkeypatch = request.getfixturevalue("monkeypatch")
    if kind.startswith("socks"):
        pytest.importorskip("socks")  # PySocks: requests needs it for a SOCKS proxy
    with TricklingHandshake(SOCKS5_OPENING if kind == "socks" else TLS_OPENING) as peer:
        url, tls_with_peer = f"https://{peer.address}/x", f"the TLS handshake with {peer.address}"
        if kind == "direct":
            direct(monkeypatch)
            yield peer, url, tls_with_peer
        elif kind == "socks-tunnel":  # the SOCKS proxy grants the tunnel; the peer behind it trickles
            with ForwardProxy() as proxy:
                behind(monkeypatch, proxy.url.replace("http://", f"socks5h://user:{SECRET}@"))
                yield peer, url, tls_with_peer
            assert proxy.relayed == [f"SOCKS5 {peer.address}"]
        elif kind in ("connect", "connect-in-tls"):  # through an HTTP proxy; an HTTPS one: TLS in TLS
            with ForwardProxy(tls=request.getfixturevalue("tls") if kind != "connect" else None) as proxy:
                behind(monkeypatch, proxy.url.replace("//", f"//user:{SECRET}@"))
                yield peer, url, f"{tls_with_peer} through the proxy 127.0.0.1:{proxy.port}"
            assert proxy.relayed == [f"CONNECT {peer.address}"]  # answered, then relayed the trickle
        else:  # the peer is the proxy
            scheme = "socks5h" if kind == "socks" else "https"
            behind(monkeypatch, f"{scheme}://user:{SECRET}@{peer.address}")
            step = "the SOCKS negotiation" if kind == "socks" else "the TLS handshake"
            yield peer, f"https://{ORIGIN}/x", f"{step} with the proxy {peer.address}"


KINDS = ["direct", "connect", "connect-in-tls", "https-proxy", "socks", "socks-tunnel"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_trickled_handshake_ends_at_the_deadline(kind, request):
    with trickled(kind, request) as (peer, url, step):
        with pytest.raises(deadline.DeadlineExceeded) as caught:
            get(url, deadline_s=1)
        assert not peer.finished.is_set()  # the call did not wait for the trickle to end
        expected = f"GET {url}: no complete response within 1 s (HTTP timeout), cut during {step}"
        assert str(caught.value) == expected and SECRET not in expected
        assert peer.ended.wait(30) and peer.hangups[0] < len(peer.opening)


@pytest.mark.parametrize("kind", ["https-proxy", "socks"])
def test_a_trickled_proxy_handshake_for_a_plain_http_origin_ends_at_the_deadline(kind, request):
    """http:// through an HTTPS proxy is forwarded inside TLS with the proxy; through SOCKS, tunnelled."""
    with trickled(kind, request) as (peer, url, step):
        url = url.replace("https://", "http://")
        with pytest.raises(deadline.DeadlineExceeded) as caught:
            get(url, deadline_s=1)
        assert not peer.finished.is_set()
        assert str(caught.value).endswith(f"(HTTP timeout), cut during {step}")


@pytest.mark.parametrize("kind", KINDS)
def test_a_stop_request_ends_a_trickled_handshake(kind, request):
    with trickled(kind, request) as (peer, url, step):
        outcome: Dict[str, BaseException] = {}

        def pull() -> None:
            try:
                get(url, deadline_s=900)  # only the stop can end it
            except BaseException as exc:
                outcome["raised"] = exc

        worker = threading.Thread(target=pull, daemon=True)
        worker.start()
        assert peer.trickling.wait(30)
        stop.request()
        worker.join(60)
        assert not peer.finished.is_set()  # the stop ended it, not the trickle's end
        assert isinstance(outcome.get("raised"), stop.Stopped)
        expected = f"stopping on request: the rest of GET {url} (cut during {step}) not started"
        assert str(outcome["raised"]) == expected


SLOW_BODY = b'{"slow":true}'


class KeepAlive(LoopbackServer):
    """HTTP/1.1 with keep-alive: ``/fast`` answers at once; ``/slow`` sends its headers, then its body
    once ``release`` is set. ``peers`` records the client's address of every request."""

    name = "keep-alive"

    def __init__(self) -> None:
        self.peers: List[object] = []
        self.release = threading.Event()
        super().__init__(_Handler, http_server.ThreadingHTTPServer)  # type: ignore[arg-type]


class _Handler(http_server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        server: KeepAlive = self.server.owner  # type: ignore[attr-defined]
        server.peers.append(self.client_address)
        body = SLOW_BODY if self.path == "/slow" else b"{}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        if self.path == "/slow":
            server.release.wait(10)
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_cut_after_the_answer_spares_the_pooled_connection_another_call_took():
    with KeepAlive() as server:
        url = f"http://127.0.0.1:{server.port}"
        session = forwarder_http.new_session()
        answered, cut = threading.Event(), threading.Event()
        calls: List[deadline._Call] = []

        def first_call() -> None:
            with deadline.watching("GET /fast", 1.0) as call:
                calls.append(call)
                session.get(f"{url}/fast", timeout=(5, 5), stream=True).content  # noqa: B018
                answered.set()  # read whole: the connection is back in the pool
                if call.cut.wait(10):  # the deadline passes while this call's block is not over
                    cut.set()

        worker = threading.Thread(target=first_call, daemon=True)
        worker.start()
        assert answered.wait(10)
        slow: List[bytes] = []

        def second_call() -> None:
            slow.append(
                deadline.request(session, "GET", f"{url}/slow", timeout=(5, 5), deadline_s=10).content
            )

        reader = threading.Thread(target=second_call, daemon=True)
        reader.start()
        assert cut.wait(10)  # the first call was cut while the second waits for its body
        server.release.set()
        reader.join(10)
        worker.join(10)
        assert server.peers[0] == server.peers[1]  # one connection: the second call took the first's
        assert slow == [SLOW_BODY]
