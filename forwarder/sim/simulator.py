"""A local fake of the platform API (token, audits, users, domains) over loopback HTTP, for the demo
and tests.

It serves a seeded organization (``generate.py``) and behaves as ``API-NOTES.md`` says the real
service does, with knobs to turn each of those off (``styles.py``) and to inject faults
(``faults.py``). This module puts the parts together: the request log, the order in which faults and
endpoints answer a request, and the life cycle (``server.py``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from .endpoints import AUDITS_PATH, Endpoints, Listing
from .entities import Record
from .faults import FaultInjection
from .generate import generate_org
from .messages import Reply, error_reply
from .org import Org
from .server import Listener, Outgoing
from .styles import ServiceStyle
from .throttle import ServerBucket
from .tokens import TokenIssuer

DEMO_CLIENT_ID = "demo-client"
DEMO_CLIENT_SECRET = "demo-secret"  # a published demo value: the simulator serves fake data only
_SECRET_PARAMS = frozenset({"client_secret", "access_token"})


class LoggedRequest(NamedTuple):
    method: str
    path: str
    query: Dict[str, str]  # last value of each parameter; secrets redacted


class Simulator(FaultInjection):
    """The fake API. Knobs are plain attributes or methods; every method is safe from any thread.

    ``style`` knobs (``ServiceStyle``: reply shape, paging, honoured parameters, order) are keywords
    too: ``Simulator(org, style="bare", paging=False)``.
    """

    def __init__(
        self,
        org: Optional[Org] = None,
        *,
        client_id: str = DEMO_CLIENT_ID,
        client_secret: str = DEMO_CLIENT_SECRET,
        require_grant_type: bool = False,  # an OAuth-style token endpoint: 400 without grant_type
        domains_endpoint: bool = True,  # False: /v1/cp/domains answers 404, as the spec would allow
        token_lifetime: int = 14400,
        token_created_ms: bool = False,
        token_path: str = "/v1/ep/token",
        clock: Callable[[], float] = time.time,  # wall-clock seconds; tests pass a fake to expire tokens
        max_rps: Optional[float] = None,  # a server-side rate limit: 429 with Retry-After past it
        **style: Any,
    ) -> None:
        super().__init__()
        self.throttle = ServerBucket(max_rps) if max_rps else None
        self.org = org if org is not None else generate_org()
        self.token_path = token_path
        self.tokens = TokenIssuer(
            client_id,
            client_secret,
            lifetime=token_lifetime,
            created_ms=token_created_ms,
            require_grant_type=require_grant_type,
            clock=clock,
        )
        self.endpoints = Endpoints(
            self.org,
            ServiceStyle(**style),
            self.tokens,
            token_path=token_path,
            domains_endpoint=domains_endpoint,
            clock=clock,
        )
        self.requests: List[LoggedRequest] = []
        self.arrivals: List[float] = []  # time.monotonic() at each request's arrival, in order
        self.audit_records_served = 0  # records in the audits answers given (before any garbling)
        # Guards the request log: handler threads append while a test counts.
        self._log_lock = threading.Lock()
        self._listener = Listener()
        self.base_url = ""

    @classmethod
    def unordered(cls, org: Optional[Org] = None, *, time_bounds: bool = False, **knobs: Any) -> Simulator:
        """A service that answers every audits query with the whole trail as a bare list, in a new
        order on each call (see ``ServiceStyle.unordered``)."""
        return cls(org, **ServiceStyle.unordered(time_bounds, **knobs))

    # -- life cycle ---------------------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0 picks a free port) in a background thread; return the base URL."""
        self.base_url = self._listener.start(self, host, port)
        return self.base_url

    def stop(self) -> None:
        self._listener.stop()

    def __enter__(self) -> Simulator:
        if not self._listener.running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- knobs and questions ------------------------------------------------------------------------

    @property
    def issued_tokens(self) -> List[str]:
        """Every token ever issued, for tests that hunt for leaks."""
        return self.tokens.issued

    def revoke_tokens(self) -> None:
        """Every token issued so far answers 401 from now on; new ones work."""
        self.tokens.revoke_all()

    def add_record(self, record: Dict[str, Any]) -> None:
        """Serve ``record`` as it is in its ``user``'s trail (a hostile or odd record for tests)."""
        self.org.add_raw_record(record)

    def add_record_in(self, record: Dict[str, Any], *trails: Tuple[str, str]) -> None:
        """Serve ``record`` in these trails only (``("user", email)``, ``("domain", name)``), whatever
        its fields say: a service that is not consistent across trails (DESIGN §2, Overlap)."""
        self.org.add_record_in(record, trails)

    def records_for(self, object_type: str, name: str, start: str = "", end: str = "~") -> List[Record]:
        """The trail the audits endpoint scopes for this query now, oldest first, before paging."""
        return self.endpoints.records_for(object_type, name, start, end)

    @property
    def throttled(self) -> int:
        """Requests answered 429 by the ``max_rps`` limit."""
        return self.throttle.refused if self.throttle is not None else 0

    def calls(self, path: str = AUDITS_PATH, **query: str) -> int:
        """How many requests reached ``path`` (with these query values, e.g. ``name=...``)."""
        with self._log_lock:
            return sum(
                1
                for r in self.requests
                if r.path == path and all(r.query.get(k) == v for k, v in query.items())
            )

    # -- answering a request (called by the server's handler threads) -------------------------------

    def respond(
        self, method: str, target: str, header: Callable[[str], Optional[str]], body: bytes
    ) -> Outgoing:
        """Log the request, then let the rate limit, an armed failure, the endpoints and the wire
        faults answer it."""
        url = urlsplit(target)
        path = url.path.rstrip("/") or "/"
        query = parse_qs(url.query, keep_blank_values=True)
        logged = {k: ("<redacted>" if k in _SECRET_PARAMS else v[-1]) for k, v in query.items()}
        with self._log_lock:
            self.requests.append(LoggedRequest(method, path, logged))
            self.arrivals.append(time.monotonic())
        echo = self._echo(body, header("Authorization"))
        wait = self.throttle.admit() if self.throttle is not None else None
        if wait is not None:
            reply: Optional[Reply] = error_reply(429, "rate limit exceeded", {"Retry-After": str(wait)})
        else:
            reply = self._failure(path, echo)
        if path == AUDITS_PATH and self._revoke_due():
            self.tokens.revoke_all()
        if reply is None:
            answer = self.endpoints.route(method, path, query, header, body)
            if isinstance(answer, Listing) and answer.key == "audits":
                with self._log_lock:
                    self.audit_records_served += len(answer.items)
            reply = self._encode(path, answer) if isinstance(answer, Listing) else answer
            if echo and path == self.token_path and reply.status >= 400:
                reply = error_reply(reply.status, "token request refused" + echo)
        wire, payload = self._on_wire(url.path, reply.body)
        return Outgoing(reply._replace(body=payload), wire, self.latency_seconds, self.trickle_seconds)


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
