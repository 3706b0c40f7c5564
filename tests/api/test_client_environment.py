"""The API client reads the environment's proxy settings once, when it is made: HTTP(S)_PROXY and
NO_PROXY still apply (as the README promises), ~/.netrc never replaces the bearer token."""

from __future__ import annotations

import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from forwarder.api.client import ApiClient, Credentials
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator

ORG = generate_org(3)
API_HOST = "api.forwarder-test.invalid"  # never resolved: only the proxy knows where it is


class Proxy(ThreadingHTTPServer):
    """A forward proxy for plain HTTP that sends every request to ``target`` and logs its URL."""

    daemon_threads = True

    def __init__(self, target: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.target = target
        self.seen: list = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    def _forward(self) -> None:
        server: Proxy = self.server  # type: ignore[assignment]
        server.seen.append((self.command, self.path))
        parts = urlsplit(self.path)  # a proxy is sent the absolute URL
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")}
        request = urllib.request.Request(
            server.target + parts.path + ("?" + parts.query if parts.query else ""),
            data=body,
            headers=headers,
            method=self.command,
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=30) as answer:
                status, payload, kind = answer.status, answer.read(), answer.headers.get("Content-Type")
        except urllib.error.HTTPError as exc:
            status, payload, kind = exc.code, exc.read(), exc.headers.get("Content-Type")
        self.send_response(status)
        self.send_header("Content-Type", kind or "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _forward

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy_to():
    servers = []

    def start(target: str) -> Proxy:
        proxy = Proxy(target)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        servers.append(proxy)
        return proxy

    yield start
    for proxy in servers:
        proxy.shutdown()
        proxy.server_close()


def test_the_proxy_of_the_environment_carries_every_api_call(monkeypatch, proxy_to):
    with Simulator(ORG) as sim:
        proxy = proxy_to(sim.base_url)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = ApiClient(f"http://{API_HOST}", Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET))
        monkeypatch.delenv("HTTP_PROXY")  # read when the client was made: a run's proxy stays put
        users = client.users(200, 10, 1000)
        client.close()
        direct = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET)).users(200, 10, 1000)
    assert users and users == direct
    assert [m for m, _ in proxy.seen] == ["POST"] + ["GET"] * (len(proxy.seen) - 1)
    assert all(url.startswith(f"http://{API_HOST}/v1/") for _, url in proxy.seen)


def test_no_proxy_still_sends_the_api_host_direct(monkeypatch, proxy_to):
    with Simulator(ORG) as sim:
        proxy = proxy_to(sim.base_url)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        client = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET))
        assert client.users(200, 10, 1000)
        client.close()
    assert proxy.seen == []


def test_a_netrc_entry_for_the_api_host_never_replaces_the_bearer_token(monkeypatch, tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password not-the-token\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    with Simulator(ORG) as sim:
        client = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET))
        assert client.users(200, 10, 1000)  # Basic auth from the file would be refused with a 401
        client.close()
