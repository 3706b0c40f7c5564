"""The API client against the simulator over loopback HTTP.

The API client reads the environment's proxy settings once, when it is made: HTTP(S)_PROXY and
NO_PROXY still apply (as the README promises), ~/.netrc never replaces the bearer token.
"""

from __future__ import annotations

import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
import requests

from forwarder import retry
from forwarder.api.client import ApiClient, Credentials
from forwarder.errors import ApiError, AuthError, MalformedResponse
from forwarder.reading.trail import TrailReader
from forwarder.sim.entities import IDN_DOMAIN
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.streams import Stream
from forwarder.timeutil import parse_iso
from tests.fakes import Waits
from tests.reading.helpers import read_through
from tests.receivers.forward_proxy import behind
from tests.receivers.users_api import UsersApi


@pytest.fixture
def waits():
    return Waits()


ORG = generate_org(4)


def client_for(sim, secret=DEMO_CLIENT_SECRET, attempts=5, waits=None, **kw):
    """A client of ``sim`` whose waits between tries are recorded in ``waits``, never slept."""
    policy = retry.RetryPolicy(attempts=attempts, sleep=Waits() if waits is None else waits)
    return ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, secret), retry=policy, **kw)


def trail(client, object_type, name, flt=None, start_us=None, limit=200):
    """Every record the reader yields (no reader's feedback), and how its read ended."""
    return read_through(TrailReader(client, limit, 100).pages(Stream(object_type, name, flt), start_us))


def busiest_user(sim):
    return max(ORG.users, key=lambda u: len(sim.records_for("user", u.email))).email


@pytest.mark.parametrize("style", ["envelope", "bare"])
def test_every_record_of_a_trail_over_pages(style):
    with Simulator(ORG, style=style) as sim:
        user = busiest_user(sim)
        items, outcome = trail(client_for(sim), "user", user, limit=25)
        assert sorted(map(str, items)) == sorted(map(str, sim.records_for("user", user)))
        assert outcome.calls > 1
        token_calls = [r for r in sim.requests if r.path.endswith("/token")]
        assert len(token_calls) == 1  # cached across pages


def test_a_revoked_token_is_refreshed_once():
    with Simulator(ORG) as sim:
        client = client_for(sim)
        user = busiest_user(sim)
        trail(client, "user", user)
        sim.revoke_tokens()
        items, _ = trail(client, "user", user)
        assert len(items) == len(sim.records_for("user", user))
        assert len(sim.issued_tokens) == 2


def test_wrong_credentials_name_the_settings_and_hide_the_secret():
    with Simulator(ORG) as sim:
        with pytest.raises(AuthError) as info:
            trail(client_for(sim, secret="not-the-secret-123"), "user", "a@b.c")
        assert "FORWARDER_CLIENT_SECRET" in str(info.value)
        assert "not-the-secret-123" not in str(info.value) + repr(
            client_for(sim, secret="not-the-secret-123")
        )


@pytest.mark.parametrize(
    "status, check",
    [
        (403, "the API client (FORWARDER_CLIENT_ID) may not read this: check its roles in the portal"),
        (404, "check FORWARDER_API_URL (the API's base URL, without /v1)"),
    ],
)
def test_a_refused_get_names_what_to_check(status, check):
    with Simulator(ORG) as sim:
        sim.fail_next(1, status=status)
        with pytest.raises(ApiError) as info:
            trail(client_for(sim), "user", "a@b.c")
    assert str(info.value).startswith(f"GET /v1/cp/audits: HTTP {status}")
    assert str(info.value).endswith(check)


def test_retry_after_is_honoured_and_attempts_are_bounded(waits):
    with Simulator(ORG) as sim:
        sim.fail_next(2, status=429, retry_after=3)
        items, _ = trail(client_for(sim, waits=waits), "domain", IDN_DOMAIN)
        # Each 429 waits its Retry-After; the request past the trail's short page (18 records might
        # be the service's page size) waits out the same pause, as the test's sleep moves no clock.
        assert items and waits == pytest.approx([3.0, 3.0, 3.0], abs=0.1)
        sim.fail_next(5, status=503)
        with pytest.raises(ApiError, match="HTTP 503"):
            trail(client_for(sim, attempts=3), "domain", IDN_DOMAIN)


@pytest.mark.parametrize(
    "kind,error", [("html", "not JSON"), ("truncated", "not JSON"), ("wrong-shape", "no 'audits' list")]
)
def test_malformed_bodies_give_clear_errors(kind, error):
    with Simulator(ORG) as sim:
        sim.malform_next(1, kind=kind)
        with pytest.raises(MalformedResponse, match=error):
            trail(client_for(sim), "domain", IDN_DOMAIN)


def test_rejected_optional_parameters_are_dropped_for_the_run():
    with Simulator(ORG, strict_params=True, honour_start_date=False, honour_sort=False) as sim:
        client = client_for(sim)
        start = parse_iso("2026-01-01T00:00:00Z")
        items, _ = trail(client, "domain", IDN_DOMAIN, start_us=start)
        assert len(items) == len(sim.records_for("domain", IDN_DOMAIN))  # everything: filtered later
        before = len(sim.requests)
        trail(client, "domain", IDN_DOMAIN, start_us=start)
        later = sim.requests[before:]
        assert later and all("start_date" not in r.query and "sort" not in r.query for r in later)


def test_prefix_filter_and_start_date_are_sent():
    with Simulator(ORG) as sim:
        user = busiest_user(sim)
        start = parse_iso(sim.records_for("user", user)[-5]["created_at"])
        items, _ = trail(client_for(sim), "user", user, flt="user.", start_us=start)
        assert items and all(r["filterable_action"].startswith("user.") for r in items)
        assert all(parse_iso(r["created_at"]) >= start - 1_000_000 for r in items)


@pytest.mark.parametrize("knob", ["strict_params", "require_grant_type"])
def test_token_form_fits_a_spec_only_or_an_oauth_style_endpoint(knob):
    with Simulator(ORG, **{knob: True}) as sim:
        items, _ = trail(client_for(sim), "domain", IDN_DOMAIN)
        assert items
        token_calls = [r for r in sim.requests if r.path.endswith("/token")]
        assert len(token_calls) == (1 if knob == "strict_params" else 2)


def test_only_the_parameter_the_service_names_is_given_up():
    """A service that pages by its own size and refuses `limit` keeps getting sort, start_date and
    offset, and every record still arrives."""
    with Simulator(ORG, strict_params=True, takes_limit=False, default_limit=25) as sim:
        user = busiest_user(sim)
        assert len(sim.records_for("user", user)) > 50
        items, outcome = trail(client_for(sim), "user", user, start_us=0)
        assert len(items) == len(sim.records_for("user", user)) and outcome.calls > 2
        later = [r for r in sim.requests if r.path.endswith("/audits")][-1]
        assert {"sort", "start_date", "offset"} <= set(later.query) and "limit" not in later.query


def test_an_offset_ceiling_ends_paging_without_giving_up_parameters():
    with Simulator(ORG, max_offset=50) as sim:
        user = busiest_user(sim)
        items, outcome = trail(client_for(sim), "user", user, limit=25)
        assert len(items) == 75 and outcome.truncated and "offset" in outcome.reason
        assert all("sort" in r.query for r in sim.requests if r.path.endswith("/audits"))


def test_the_token_path_is_a_setting():
    with Simulator(ORG, token_path="/v1/cp/oauth/token") as sim:
        items, _ = trail(client_for(sim, token_path="/v1/cp/oauth/token"), "domain", IDN_DOMAIN)
        assert items and sim.requests[0].path == "/v1/cp/oauth/token"
        with pytest.raises(ApiError, match="FORWARDER_TOKEN_PATH"):
            trail(client_for(sim), "domain", IDN_DOMAIN)  # the spec's default path is not there


def test_a_token_is_reused_by_later_clients_with_the_same_credentials():
    with Simulator(ORG) as sim:
        for _ in range(3):
            trail(client_for(sim), "domain", IDN_DOMAIN)
        assert len(sim.issued_tokens) == 1
        with pytest.raises(AuthError):  # another secret never reuses that token
            trail(client_for(sim, secret="rotated-secret"), "domain", IDN_DOMAIN)
        sim.revoke_tokens()
        trail(client_for(sim), "domain", IDN_DOMAIN)  # a reused token that was revoked is refreshed
        assert len(sim.issued_tokens) == 2


def test_a_listing_stopped_by_an_offset_ceiling_keeps_what_it_read_and_says_so(caplog):
    org = generate_org(12)
    with Simulator(org, max_offset=5) as sim:
        listed = client_for(sim).users(4, 10, 1000)  # offsets 0 and 4 answer; 8 is past the ceiling
        assert listed == org.user_list()[:8]
        assert any(r.getMessage() == "paging stopped before the end" for r in caplog.records)


class _Recording(requests.Session):
    """Answers every request at once (a token, then empty pages) and keeps the URLs it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list = []

    def send(self, request, **kwargs):
        self.urls.append(request.url)
        response = requests.Response()
        response.status_code, response.request = 200, request
        response._content = b'{"access_token": "t"}' if request.method == "POST" else b"[]"
        return response


def test_a_get_sends_the_very_query_requests_makes_of_its_parameters():
    session = _Recording()
    client = ApiClient("https://api.example", Credentials("id", "secret"), session=session)
    optional = {"sort": "created_at ASC", "end_date": "a+b&c=d/é", "start_date": "2026-01-01T00:00:00Z"}
    client.audits(Stream("domain", IDN_DOMAIN, "domain.dkim"), optional, 200, 400)
    # (the parameters in the order the client gives them: the stream's, then the optional ones)
    expected = {"object_type": "domain", "name": IDN_DOMAIN, "filter": "domain.dkim", **optional}
    expected.update(limit=200, offset=400)
    url = "https://api.example/v1/cp/audits"
    assert session.urls[-1] == requests.Request("GET", url, params=expected).prepare().url


@pytest.mark.parametrize(
    "planted", [b"ab\\r\\nX-Injected: 1", b"ab\\u4e2d\\u00e9"], ids=["crlf", "non-latin-1"]
)
def test_a_token_no_bearer_header_can_carry_is_refused_on_receipt(planted, caplog, waits):
    """A token endpoint answering a token with CR LF (or characters outside Latin-1): one clear
    error naming the endpoint and its settings, no retries, and the token in no output."""
    with Simulator(ORG) as sim:
        sim.rewrite_next(1, b'"access_token":"', b'"access_token":"' + planted, path_prefix=sim.token_path)
        with pytest.raises(MalformedResponse) as info:
            trail(client_for(sim, waits=waits), "domain", IDN_DOMAIN)
        message = str(info.value)
        assert "FORWARDER_TOKEN_PATH" in message and sim.base_url + sim.token_path in message
        assert sim.calls() == 0 and not waits  # never sent, nothing retried
        (issued,) = sim.issued_tokens
        outputs = message + caplog.text
        assert issued not in outputs and "ab" not in message


def test_a_users_listing_that_never_ends_stops_at_the_cap_with_an_error_naming_it():
    """A service answering a full page of new users at every offset: followed for 1,000 pages
    before (up to 200,000 streams)."""
    with UsersApi("endless") as api:
        client = ApiClient(api.url, Credentials("id", "secret-for-users"))
        with pytest.raises(ApiError, match="FORWARDER_MAX_USERS") as info:
            client.users(200, 1000, max_users=1000)
        assert "1000" in str(info.value)
        assert api.requests["/v1/ep/users"] == 6  # the sixth page proves there are more than 1,000


def test_a_users_listing_that_repeats_earlier_pages_ends_there():
    with UsersApi("cycle") as api:
        users = ApiClient(api.url, Credentials("id", "secret-for-users")).users(25, 1000, max_users=1000)
        assert sorted(u["email"] for u in users) == sorted(f"user{n}@example.com" for n in range(50))
        assert api.requests["/v1/ep/users"] == 3  # the third page repeats the first


PROXIED_ORG = generate_org(3)
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
    with Simulator(PROXIED_ORG) as sim:
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
    with Simulator(PROXIED_ORG) as sim:
        proxy = proxy_to(sim.base_url)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        client = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET))
        assert client.users(200, 10, 1000)
        client.close()
    assert proxy.seen == []


def test_a_proxy_given_to_the_client_carries_every_api_call_and_the_environments_does_not(
    monkeypatch, proxy_to
):
    with Simulator(PROXIED_ORG) as sim:
        given, environment = proxy_to(sim.base_url), proxy_to(sim.base_url)
        behind(monkeypatch, environment.url)
        client = ApiClient(
            f"http://{API_HOST}", Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET), proxy=given.url
        )
        assert client.users(200, 10, 1000)
        client.close()
    assert [m for m, _ in given.seen] == ["POST"] + ["GET"] * (len(given.seen) - 1)
    assert environment.seen == []


def test_no_proxy_given_sends_the_api_calls_direct_whatever_the_environment_says(monkeypatch, proxy_to):
    with Simulator(PROXIED_ORG) as sim:
        proxy = proxy_to(sim.base_url)
        behind(monkeypatch, proxy.url)
        client = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET), proxy="")
        assert client.users(200, 10, 1000)
        client.close()
    assert proxy.seen == []


def test_a_netrc_entry_for_the_api_host_never_replaces_the_bearer_token(monkeypatch, tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password not-the-token\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    with Simulator(PROXIED_ORG) as sim:
        client = ApiClient(sim.base_url, Credentials(DEMO_CLIENT_ID, DEMO_CLIENT_SECRET))
        assert client.users(200, 10, 1000)  # Basic auth from the file would be refused with a 401
        client.close()
