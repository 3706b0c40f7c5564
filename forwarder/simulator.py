"""A local fake of the platform API (token, audits, users) over loopback HTTP, for the demo and tests.

It serves the seeded organization of ``simdata`` and behaves as ``API-NOTES.md`` says the real service
does (envelope, limit/offset paging, prefix filter, ``start_date``, 13-month domain history), with
knobs to turn each of those off and to inject faults. It never logs: request lines and headers carry
tokens, and the standard library would write them to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hmac
import random
import secrets
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Set, Tuple
from urllib.parse import parse_qs, urlsplit

from .jsonutil import dumps
from .simdata import Org, Record, generate_org
from .timeutil import format_us, parse_iso

DEMO_CLIENT_ID = "demo-client"
DEMO_CLIENT_SECRET = "demo-secret"  # a published demo value: the simulator serves fake data only
AUDITS_PATH = "/v1/cp/audits"
USERS_PATH = "/v1/ep/users"
DOMAINS_PATH = "/v1/cp/domains"  # not in the spec; public material says the real service has it
MALFORM_KINDS = ("html", "truncated", "wrong-shape", "not-list-items")
# a body, or the status line and headers, sent a byte at a time; a connection closed mid-body
BREAK_KINDS = ("trickle", "trickle-headers", "cut")
_SECRET_PARAMS = frozenset({"client_secret", "access_token"})
_AUDIT_PARAMS = frozenset({"object_type", "name", "filter"})
_HTML = b"<!DOCTYPE html><html><head><title>Maintenance</title></head><body>Back soon.</body></html>"

Query = Dict[str, List[str]]


class LoggedRequest(NamedTuple):
    method: str
    path: str
    query: Dict[str, str]  # last value of each parameter; secrets redacted


class _Reply(NamedTuple):
    status: int
    body: bytes
    headers: Dict[str, str]


class _BadRequest(Exception):
    """A query the API would refuse with 400; the message becomes error_description."""


@dataclass
class _Fault:
    remaining: int
    path_prefix: str
    status: int = 0
    retry_after: Optional[float] = None
    kind: str = ""
    old: bytes = b""
    new: bytes = b""


def _json(status: int, payload: Any, headers: Optional[Dict[str, str]] = None) -> _Reply:
    return _Reply(status, dumps(payload), {"Content-Type": "application/json", **(headers or {})})


def _error(status: int, description: str, headers: Optional[Dict[str, str]] = None) -> _Reply:
    error = HTTPStatus(status).phrase
    body = {"version": 1, "status": "error", "code": status, "error": error, "error_description": description}
    return _json(status, body, headers)


def _one(query: Query, name: str) -> Optional[str]:
    values = query.get(name)
    return values[-1] if values else None


def _int_param(query: Query, name: str, default: int, minimum: int) -> int:
    text = _one(query, name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise _BadRequest(f"{name} must be an integer") from None
    if value < minimum:
        raise _BadRequest(f"{name} must be at least {minimum}")
    return value


def _time_param(query: Query, name: str) -> Optional[str]:
    """An ISO 8601 bound in the canonical form of created_at, or None when absent."""
    text = _one(query, name)
    if text is None:
        return None
    try:
        return format_us(parse_iso(text))
    except ValueError:
        raise _BadRequest(f"{name} must be an ISO 8601 timestamp") from None


def _malformed(kind: str, key: str, payload: Any) -> _Reply:
    """A 200 whose body is not what a client expects: a proxy's HTML page, a cut-off body, ..."""
    if kind == "html":
        return _Reply(200, _HTML, {"Content-Type": "text/html; charset=utf-8"})
    if kind == "truncated":
        body = dumps(payload)
        return _Reply(200, body[: max(1, len(body) // 2)], {"Content-Type": "application/json"})
    if kind == "wrong-shape":
        return _json(200, {"version": 1, "status": "ok", "code": 200, "data": {"message": "ok"}})
    strings = ["unexpected", "strings"]
    if isinstance(payload, dict):
        return _json(200, {**payload, key: strings, "count": len(strings)})
    return _json(200, strings)


class Simulator:
    """The fake API. Knobs are plain attributes or methods; every method is safe from any thread."""

    def __init__(
        self,
        org: Optional[Org] = None,
        *,
        client_id: str = DEMO_CLIENT_ID,
        client_secret: str = DEMO_CLIENT_SECRET,
        style: str = "envelope",
        paging: bool = True,
        default_limit: int = 25,
        max_limit: int = 200,
        honour_start_date: bool = True,
        honour_sort: bool = True,
        shuffle: bool = False,  # a different order on every call, whatever sort asks (see unordered())
        case_sensitive_names: bool = False,  # name matches the trail's spelling exactly
        strict_params: bool = False,  # 400 on parameters (and token form fields) outside the spec
        require_grant_type: bool = False,  # an OAuth-style token endpoint: 400 without grant_type
        takes_limit: bool = True,  # False: pages are always default_limit long (strict: 400 on limit)
        max_offset: Optional[int] = None,  # an offset ceiling: 400 beyond it
        domains_endpoint: bool = True,  # False: /v1/cp/domains answers 404, as the spec would allow
        token_lifetime: int = 14400,
        token_created_ms: bool = False,
        token_path: str = "/v1/ep/token",
        clock: Callable[[], float] = time.time,  # wall-clock seconds; tests pass a fake to expire tokens
    ) -> None:
        if style not in ("envelope", "bare"):
            raise ValueError(f"style must be 'envelope' or 'bare', not {style!r}")
        self.org = org if org is not None else generate_org()
        self.client_id = client_id
        self._client_secret = client_secret
        self.style = style
        self.paging = paging
        self.default_limit = default_limit
        self.max_limit = max_limit
        self.honour_start_date = honour_start_date
        self.honour_sort = honour_sort
        self.shuffle = shuffle
        self.case_sensitive_names = case_sensitive_names
        self._shuffler = random.Random(0)
        self.strict_params = strict_params
        self.require_grant_type = require_grant_type
        self.takes_limit = takes_limit
        self.max_offset = max_offset
        self.domains_endpoint = domains_endpoint
        self.token_lifetime = token_lifetime
        self.token_created_ms = token_created_ms
        self.token_path = token_path
        self.latency_seconds = 0.0
        self.trickle_seconds = 1.0  # pause between the bytes of a "trickle" body
        self.trickled: List[Tuple[int, int]] = []  # (bytes sent, bytes in the reply) per trickled reply
        self.echo = False  # error replies quote the request (form body, Authorization), as some do
        self.requests: List[LoggedRequest] = []
        self._revoke_at: Set[int] = set()
        self._audits_seen = 0
        self.base_url = ""
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: Dict[str, float] = {}  # token -> issue time (clock seconds)
        self.issued_tokens: List[str] = []  # every token ever issued, for tests that hunt for leaks
        self._failures: List[_Fault] = []
        self._malforms: List[_Fault] = []
        self._breaks: List[_Fault] = []
        self._rewrites: List[_Fault] = []
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None

    @classmethod
    def unordered(cls, org: Optional[Org] = None, *, time_bounds: bool = False, **knobs: Any) -> Simulator:
        """A service that answers every audits query with the whole trail as a bare list, in a
        different order on each call, ignoring limit, offset and sort; with ``time_bounds`` it still
        honours start_date/end_date (and pages, though the order changes between pages)."""
        knobs.setdefault("style", "bare")
        return cls(
            org, paging=time_bounds, honour_sort=False, honour_start_date=time_bounds, shuffle=True, **knobs
        )

    # -- life cycle ---------------------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0 picks a free port) in a background thread; return the base URL."""
        if self._server is not None:
            raise RuntimeError("the simulator is already running")
        self._server = _Server((host, port), self)
        # A short poll interval: stop() waits for the serving loop to notice, up to one interval.
        serve = functools.partial(self._server.serve_forever, poll_interval=0.05)
        self._thread = threading.Thread(target=serve, name="api-simulator", daemon=True)
        self._thread.start()
        self.base_url = f"http://{host}:{self._server.server_address[1]}"
        return self.base_url

    def stop(self) -> None:
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is not None:
            server.shutdown()
            server.server_close()
            server.close_connections()
        if thread is not None:
            thread.join()

    def __enter__(self) -> Simulator:
        if self._server is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- knobs --------------------------------------------------------------------------------------

    def fail_next(
        self, n: int, status: int = 503, retry_after: Optional[float] = None, path_prefix: str = AUDITS_PATH
    ) -> None:
        """Answer the next ``n`` requests under ``path_prefix`` with ``status`` (before authentication)."""
        if status < 400:
            raise ValueError("a failure needs an error status")
        with self._lock:
            if n > 0:
                self._failures.append(_Fault(n, path_prefix, status=status, retry_after=retry_after))

    def malform_next(self, n: int, kind: str = "html", path_prefix: str = AUDITS_PATH) -> None:
        """Garble the next ``n`` successful list responses under ``path_prefix`` (see MALFORM_KINDS)."""
        if kind not in MALFORM_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MALFORM_KINDS)}")
        with self._lock:
            if n > 0:
                self._malforms.append(_Fault(n, path_prefix, kind=kind))

    def break_next(self, n: int, kind: str = "trickle", path_prefix: str = AUDITS_PATH) -> None:
        """Break the next ``n`` replies under ``path_prefix`` on the wire (see BREAK_KINDS)."""
        if kind not in BREAK_KINDS:
            raise ValueError(f"kind must be one of {', '.join(BREAK_KINDS)}")
        with self._lock:
            if n > 0:
                self._breaks.append(_Fault(n, path_prefix, kind=kind))

    def rewrite_next(self, n: int, old: bytes, new: bytes, path_prefix: str = AUDITS_PATH) -> None:
        """Replace ``old`` by ``new`` in the next ``n`` reply bodies under ``path_prefix`` holding it:
        bytes no JSON encoder writes (invalid UTF-8, a lone surrogate escape, a huge integer)."""
        with self._lock:
            if n > 0:
                self._rewrites.append(_Fault(n, path_prefix, old=old, new=new))

    def add_record(self, record: Dict[str, Any]) -> None:
        """Serve ``record`` as it is in its ``user``'s trail (a hostile or odd record for tests)."""
        self.org.add_raw_record(record)

    def revoke_tokens(self) -> None:
        """Every token issued so far answers 401 from now on; new ones work."""
        with self._lock:
            self._tokens.clear()

    def revoke_tokens_at(self, *audits_calls: int) -> None:
        """Revoke every token just before the audits request with each of these numbers (from 1):
        a token lost mid-run at a fixed point, whatever the timing of the rest of the run."""
        with self._lock:
            self._revoke_at.update(audits_calls)

    def records_for(self, object_type: str, name: str, start: str = "", end: str = "~") -> List[Record]:
        """The trail the audits endpoint scopes for this query now, oldest first, before paging."""
        return self.org.records_for(object_type, name, int(self._clock() * 1_000_000), start, end)

    def calls(self, path: str = AUDITS_PATH, **query: str) -> int:
        """How many requests reached ``path`` (with these query values, e.g. ``name=...``)."""
        with self._lock:
            return sum(
                1
                for r in self.requests
                if r.path == path and all(r.query.get(k) == v for k, v in query.items())
            )

    # -- request handling ---------------------------------------------------------------------------

    def _dispatch(
        self, method: str, target: str, header: Callable[[str], Optional[str]], body: bytes
    ) -> _Reply:
        url = urlsplit(target)
        path = url.path.rstrip("/") or "/"
        query = parse_qs(url.query, keep_blank_values=True)
        logged = {k: ("<redacted>" if k in _SECRET_PARAMS else v[-1]) for k, v in query.items()}
        with self._lock:
            self.requests.append(LoggedRequest(method, path, logged))
            failure = self._take(self._failures, path)
            if path == AUDITS_PATH:
                self._audits_seen += 1
                if self._audits_seen in self._revoke_at:
                    self._tokens.clear()
        echo = ""
        if self.echo:
            echo = f" (request: {body.decode('utf-8', 'replace')} {header('Authorization') or ''})"
        if failure is not None:
            extra = {} if failure.retry_after is None else {"Retry-After": f"{failure.retry_after:g}"}
            return _error(failure.status, "injected failure" + echo, extra)
        routes = {self.token_path: "POST", AUDITS_PATH: "GET", USERS_PATH: "GET"}
        if self.domains_endpoint:
            routes[DOMAINS_PATH] = "GET"
        if path not in routes:
            return _error(404, f"no such endpoint: {path}")
        if method != routes[path]:
            return _error(405, f"{path} accepts {routes[path]} only", {"Allow": routes[path]})
        if path == self.token_path:
            reply = self._token(header("Content-Type") or "", body)
            if echo and reply.status >= 400:
                reply = _error(reply.status, "token request refused" + echo)
            return reply
        if not self._authorized(header("Authorization")):
            return _error(401, "missing, invalid or expired access token", {"WWW-Authenticate": "Bearer"})
        try:
            if path == AUDITS_PATH:
                return self._list_reply(path, "audits", self._audits(query), query)
            self._check_params(query, set())
            if path == DOMAINS_PATH:
                return self._list_reply(path, "domains", self.org.domain_list(), query)
            return self._list_reply(path, "users", self.org.user_list(), query)
        except _BadRequest as exc:
            return _error(400, str(exc))

    @staticmethod
    def _take(faults: List[_Fault], path: str) -> Optional[_Fault]:
        """Consume one use of the first fault armed for ``path``. Caller holds the lock."""
        for fault in faults:
            if path.startswith(fault.path_prefix):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    faults.remove(fault)
                return fault
        return None

    def _token(self, content_type: str, body: bytes) -> _Reply:
        if content_type.split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
            return _error(400, "the token request must be application/x-www-form-urlencoded")
        form = parse_qs(body.decode("utf-8", "replace"))
        client_id, secret, grant = (_one(form, k) for k in ("client_id", "client_secret", "grant_type"))
        if not client_id or not secret:
            return _error(400, "client_id and client_secret are required")
        if grant not in (None, "client_credentials"):
            return _error(400, "unsupported grant_type")
        if grant is None and self.require_grant_type:
            return _error(400, "grant_type is required")
        extra = sorted(set(form) - {"client_id", "client_secret"})
        if extra and self.strict_params:
            return _error(400, f"unknown field(s): {', '.join(extra)}")
        id_ok = hmac.compare_digest(client_id.encode(), self.client_id.encode())
        if not (hmac.compare_digest(secret.encode(), self._client_secret.encode()) and id_ok):
            return _error(401, "invalid client credentials")
        token, issued = secrets.token_urlsafe(32), self._clock()
        with self._lock:
            self._tokens[token] = issued
            self.issued_tokens.append(token)
        created = int(issued * 1000) if self.token_created_ms else int(issued)
        return _json(
            200,
            {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": self.token_lifetime,
                "created_at": created,
            },
        )

    def _authorized(self, authorization: Optional[str]) -> bool:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        with self._lock:
            issued = self._tokens.get(token.strip())
        return issued is not None and self._clock() < issued + self.token_lifetime

    def _check_params(self, query: Query, known: Set[str]) -> None:
        if not self.strict_params:
            return
        if self.paging:
            known = known | ({"limit", "offset"} if self.takes_limit else {"offset"})
        unknown = sorted(set(query) - known)
        if unknown:
            raise _BadRequest(f"unknown parameter(s): {', '.join(unknown)}")

    def _audits(self, query: Query) -> List[Record]:
        known = set(_AUDIT_PARAMS)
        known |= {"start_date", "end_date"} if self.honour_start_date else set()
        known |= {"sort"} if self.honour_sort else set()
        self._check_params(query, known)
        object_type, name, prefix = (_one(query, k) for k in ("object_type", "name", "filter"))
        if object_type not in ("user", "domain"):
            raise _BadRequest("object_type must be user or domain")
        if not name:
            raise _BadRequest("name is required")
        start = end = None
        if self.honour_start_date:  # canonical timestamps compare correctly as text
            start, end = _time_param(query, "start_date"), _time_param(query, "end_date")
        records = self.records_for(object_type, name, start or "", end or "~")
        if self.case_sensitive_names:
            field = "user" if object_type == "user" else "object"
            records = [r for r in records if r.get(field) == name]
        if prefix:  # a "starts with" match, as the product's activity search does
            records = [r for r in records if r["filterable_action"].startswith(prefix)]
        if self.shuffle:
            with self._lock:
                self._shuffler.shuffle(records)
            return records
        order = _one(query, "sort") if self.honour_sort else None
        if order is None:
            return records[::-1]  # newest first, as the portal lists activity
        field_name, _, direction = order.partition(" ")
        if field_name != "created_at" or direction.upper() not in ("", "ASC", "DESC"):
            raise _BadRequest("sort must be 'created_at ASC' or 'created_at DESC'")
        return records[::-1] if direction.upper() == "DESC" else records

    def _list_reply(self, path: str, key: str, items: List[Record], query: Query) -> _Reply:
        offset = 0
        if self.paging:
            limit = (
                _int_param(query, "limit", self.default_limit, minimum=1)
                if self.takes_limit
                else self.default_limit
            )
            offset = _int_param(query, "offset", 0, minimum=0)
            if self.max_offset is not None and offset > self.max_offset:
                raise _BadRequest(f"offset must be at most {self.max_offset}")
            if limit > self.max_limit:
                if self.strict_params:
                    raise _BadRequest(f"limit must be at most {self.max_limit}")
                limit = self.max_limit
            items = items[offset : offset + limit]
        payload: Any = items
        if self.style == "envelope":
            payload = {
                "version": 1,
                "status": "ok",
                "code": 200,
                "offset": offset,
                "count": len(items),
                key: items,
            }
        with self._lock:
            malform = self._take(self._malforms, path)
        return _json(200, payload) if malform is None else _malformed(malform.kind, key, payload)


class _Server(ThreadingHTTPServer):
    """Tracks open connections so that stop() also ends keep-alive ones: a stopped server must not answer."""

    daemon_threads = True

    def __init__(self, address: Tuple[str, int], simulator: Simulator) -> None:
        self.simulator = simulator
        self._open: Set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._open_lock:
            for conn in self._open:
                with contextlib.suppress(OSError):  # the peer may have gone already
                    conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # else every reply waits ~40 ms for the client's delayed ACK
    protocol_version = "HTTP/1.1"  # keep-alive, like the real service behind its load balancer
    timeout = 30  # drop idle connections instead of keeping a thread per client forever
    server: _Server

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        simulator = self.server.simulator
        reply = simulator._dispatch(method, self.path, self.headers.get, body)
        path = urlsplit(self.path).path
        with simulator._lock:
            wire = simulator._take(simulator._breaks, path)
            rewrite = next(
                (f for f in simulator._rewrites if path.startswith(f.path_prefix) and f.old in reply.body),
                None,
            )
            if rewrite is not None:
                rewrite.remaining -= 1
                if rewrite.remaining <= 0:
                    simulator._rewrites.remove(rewrite)
        payload = reply.body if rewrite is None else reply.body.replace(rewrite.old, rewrite.new)
        if simulator.latency_seconds > 0:
            time.sleep(simulator.latency_seconds)
        if wire is not None and wire.kind == "trickle-headers":
            head = f"HTTP/1.1 {reply.status} X\r\nContent-Length: {len(payload)}\r\n\r\n".encode("ascii")
            self._trickle(head + payload, simulator.trickle_seconds)
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if wire is None:
            self.wfile.write(payload)
        elif wire.kind == "cut":
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self._trickle(payload, simulator.trickle_seconds)

    def _trickle(self, payload: bytes, pause: float) -> None:
        """One byte per ``pause``: each read returns in time, the response never ends in time."""
        sent = 0
        try:
            for at in range(len(payload)):
                self.wfile.write(payload[at : at + 1])
                self.wfile.flush()
                sent += 1
                if self.server.simulator._server is None:  # stopped: give up
                    return
                time.sleep(pause)
        except OSError:  # the client hung up: that is the point
            pass
        finally:
            with self.server.simulator._lock:
                self.server.simulator.trickled.append((sent, len(payload)))

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the default writes every request line to stderr."""


@contextlib.contextmanager
def organizations(orgs: List[Org], **knobs: Any) -> Iterator[List[Simulator]]:
    """Several organizations, as a multi-tenant installation sees them: one simulator each, on its
    own port, with its own credentials (``client_id`` ``org-<i>``, ``client_secret`` from
    ``org_secret(i)``). ``knobs`` are given to every one."""
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(Simulator(org, client_id=f"org-{i}", client_secret=org_secret(i), **knobs))
            for i, org in enumerate(orgs)
        ]


def org_secret(index: int) -> str:
    """The client secret of organization ``index`` of ``organizations`` (fake data only)."""
    return f"org-{index}-demo-secret"


def serve(argv: Optional[List[str]] = None) -> int:
    """``audit-forwarder simulate``: run the simulator in the foreground until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="audit-forwarder simulate", description="Run the fake platform API."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated organization")
    parser.add_argument("--style", choices=("envelope", "bare"), default="envelope", help="response shape")
    parser.add_argument(
        "--scenarios", action="store_true", help="serve the detection scenarios (forwarder/simscenarios.py)"
    )
    args = parser.parse_args(argv)
    from .simscenarios import seeded_org  # only when asked: the scenarios are a test aid

    org = seeded_org(args.seed)[0] if args.scenarios else generate_org(args.seed)
    simulator = Simulator(org, style=args.style)
    try:
        url = simulator.start(args.host, args.port)
    except OSError as exc:
        print(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"platform API simulator listening on {url} (Ctrl-C to stop)")
    print(f"  FORWARDER_API_URL={url}")
    print(f"  FORWARDER_CLIENT_ID={DEMO_CLIENT_ID}")
    print(f"  FORWARDER_CLIENT_SECRET={DEMO_CLIENT_SECRET}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        simulator.stop()
    return 0
