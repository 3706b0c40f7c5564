"""Behind a proxy the total deadline and a stop still reach the socket: a peer trickling its status
line and headers through a real forward proxy (plain forwarding for http://, a CONNECT tunnel for
https://, a SOCKS5 tunnel) holds a 1 s call for about 1 s, not for the ~14 s the trickle lasts.

The bound asserted is generous (6 s): it tells a cut call from one that waited for the headers."""

from __future__ import annotations

import ssl
import threading
import time
from typing import Optional

import pytest

from forwarder import deadline, http, retry, stop
from forwarder.api.client import ApiClient, Credentials
from forwarder.errors import ApiError
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from tests.fakes import Waits
from tests.receivers.forward_proxy import ForwardProxy, behind
from tests.receivers.trickling_peer import REPLY, TricklingPeer

BOUND_S = 6.0  # the trickled reply takes len(REPLY) * 0.2 s, about 14 s
ORG = generate_org(3)


@pytest.fixture(autouse=True)
def stop_reset():
    yield
    stop.reset()


@pytest.fixture
def proxy(monkeypatch):
    """A forward proxy every session of the run is told about (and no other proxy setting)."""
    with ForwardProxy() as running:
        behind(monkeypatch, running.url)
        yield running


@pytest.fixture
def socks(proxy, monkeypatch):
    """The same proxy named as a SOCKS5 one (names resolved by the proxy, as ``socks5h`` asks)."""
    pytest.importorskip("socks")  # PySocks: requests needs it for a SOCKS proxy
    behind(monkeypatch, proxy.url.replace("http", "socks5h", 1))
    return proxy


def client_for(url: str, timeout: float) -> ApiClient:
    credentials = Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)
    policy = retry.RetryPolicy(attempts=1, sleep=Waits())  # one try: nothing to wait for, ever
    return ApiClient(url, credentials, timeout=timeout, retry=policy)


def cut_at_deadline(peer: TricklingPeer) -> float:
    """Seconds a 1 s token request to ``peer`` took; it must end in the deadline's ApiError."""
    started = time.monotonic()
    with pytest.raises(
        ApiError,
        match=r"/v1/ep/token \(FORWARDER_API_URL, FORWARDER_TOKEN_PATH\): .*no complete response within 1 s",
    ):
        client_for(peer.url, timeout=1).request_token()
    return time.monotonic() - started


def assert_cut_inside_the_headers(peer: TricklingPeer) -> None:
    while not peer.hangups:  # the peer notices the hang-up at its next byte
        time.sleep(0.05)
    assert peer.hangups[0] < REPLY.index(b"\r\n\r\n")


def test_trickled_headers_through_the_proxy_end_at_the_deadline(proxy):
    with TricklingPeer() as peer:
        assert cut_at_deadline(peer) < BOUND_S
        assert_cut_inside_the_headers(peer)
    assert proxy.relayed == [f"POST {peer.url}/v1/ep/token"]  # forwarded, not sent direct


def test_trickled_headers_through_a_connect_tunnel_end_at_the_deadline(proxy, tls):
    with TricklingPeer(tls=tls) as peer:
        assert cut_at_deadline(peer) < BOUND_S
        assert_cut_inside_the_headers(peer)
    assert proxy.relayed == [f"CONNECT {peer.url.split('//')[1]}"]


def test_trickled_headers_inside_tls_through_an_https_proxy_end_at_the_deadline(tls, monkeypatch):
    """TLS to the proxy, CONNECT, TLS inside it to the peer: the cut reaches the socket under both."""
    with ForwardProxy(tls=tls) as https_proxy, TricklingPeer(tls=tls) as peer:
        behind(monkeypatch, https_proxy.url)
        cut_at_deadline(peer)
        assert_cut_inside_the_headers(peer)
    assert https_proxy.relayed == [f"CONNECT {peer.url.split('//')[1]}"]


def test_trickled_headers_through_a_socks_proxy_end_at_the_deadline(socks, tls):
    with TricklingPeer() as peer, TricklingPeer(tls=tls) as tls_peer:
        for trickling in (peer, tls_peer):
            assert cut_at_deadline(trickling) < BOUND_S
            assert_cut_inside_the_headers(trickling)
    assert socks.relayed == [f"SOCKS5 {p.url.split('//')[1]}" for p in (peer, tls_peer)]


def peer_context(kind: str, request: pytest.FixtureRequest) -> Optional[ssl.SSLContext]:
    """Sets the proxy up as ``kind`` asks; the TLS context of the peer behind it, if any."""
    if kind == "socks":
        request.getfixturevalue("socks")
    return request.getfixturevalue("tls") if kind == "connect" else None


KINDS = ["forward", "connect", "socks"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_stop_request_ends_a_call_through_the_proxy(proxy, kind, request):
    with TricklingPeer(tls=peer_context(kind, request)) as peer:
        client = client_for(peer.url, timeout=900)  # only the stop can end it
        outcome = {}

        def pull():
            try:
                client.request_token()
            except stop.Stopped as exc:
                outcome["stopped"] = exc

        worker = threading.Thread(target=pull, daemon=True)
        worker.start()
        while not peer.requests and worker.is_alive():
            time.sleep(0.02)
        stopped_at = time.monotonic()
        stop.request()
        worker.join(60)
        assert time.monotonic() - stopped_at < BOUND_S
        assert not worker.is_alive() and "stopped" in outcome
    assert len(proxy.relayed) == 1


def test_without_a_proxy_the_call_goes_direct_and_is_cut_too(proxy, monkeypatch):
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.delenv("HTTPS_PROXY")
    with TricklingPeer() as peer:
        assert cut_at_deadline(peer) < BOUND_S
        assert_cut_inside_the_headers(peer)
    assert proxy.relayed == []


def test_whole_answers_come_through_the_proxy(proxy):
    """The watched connections of the proxy's pools carry a normal exchange: a token, then users."""
    with Simulator(ORG) as sim:
        assert len(client_for(sim.base_url, timeout=10).users(200, 10, 1000)) == len(ORG.users)
    assert proxy.relayed[0] == f"POST {sim.base_url}/v1/ep/token"
    assert len(proxy.relayed) == len(sim.requests) >= 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_whole_answer_comes_through_each_kind_of_proxy(proxy, kind, request):
    with TricklingPeer(pause=0, tls=peer_context(kind, request)) as peer:
        session = http.new_session()
        http.pin_environment(session, peer.url)
        response = deadline.request(session, "GET", f"{peer.url}/x", timeout=(5, 5), deadline_s=5)
    assert response.status_code == 200 and response.json() == {}
    assert len(proxy.relayed) == 1
