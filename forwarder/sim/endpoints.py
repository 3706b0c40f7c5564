"""The simulated API's endpoints: routing, the bearer check, and the audits, users and domains lists
(the token endpoint is ``tokens.py``). Behaviour per ``API-NOTES.md``: ``object_type``/``name``
scoping, a prefix ``filter``, ``start_date``/``end_date``, 13-month domain history; the listing's
shape, paging and order come from the ``ServiceStyle``."""

from __future__ import annotations

from typing import Any, Callable, List, NamedTuple, Optional, Union

from .entities import Record
from .messages import BadRequest, Query, Reply, error_reply, one
from .org import Org
from .styles import ServiceStyle
from .tokens import TokenIssuer

AUDITS_PATH = "/v1/cp/audits"
USERS_PATH = "/v1/ep/users"
DOMAINS_PATH = "/v1/cp/domains"  # not in the spec; public material says the real service has it


class Listing(NamedTuple):
    """A successful list reply before it is encoded (a fault may garble it)."""

    key: str  # the envelope's list member: "audits", "users", "domains"
    payload: Any

    @property
    def items(self) -> List[Any]:
        return self.payload[self.key] if isinstance(self.payload, dict) else list(self.payload)


class Endpoints:
    def __init__(
        self,
        org: Org,
        service: ServiceStyle,
        tokens: TokenIssuer,
        *,
        token_path: str,
        domains_endpoint: bool,  # False: /v1/cp/domains answers 404, as the spec would allow
        clock: Callable[[], float],
    ) -> None:
        self.org = org
        self.service = service
        self.tokens = tokens
        self.token_path = token_path
        self.routes = {token_path: "POST", AUDITS_PATH: "GET", USERS_PATH: "GET"}
        if domains_endpoint:
            self.routes[DOMAINS_PATH] = "GET"
        self._clock = clock

    def route(
        self, method: str, path: str, query: Query, header: Callable[[str], Optional[str]], body: bytes
    ) -> Union[Reply, Listing]:
        """The answer to one request, as the service would give it."""
        if path not in self.routes:
            return error_reply(404, f"no such endpoint: {path}")
        if method != self.routes[path]:
            allowed = self.routes[path]
            return error_reply(405, f"{path} accepts {allowed} only", {"Allow": allowed})
        if path == self.token_path:
            return self.tokens.reply(header("Content-Type") or "", body, self.service.strict_params)
        if not self.tokens.authorized(header("Authorization")):
            return error_reply(
                401, "missing, invalid or expired access token", {"WWW-Authenticate": "Bearer"}
            )
        try:
            if path == AUDITS_PATH:
                return Listing("audits", self.service.page("audits", self._audits(query), query))
            self.service.check_params(query, set())
            if path == DOMAINS_PATH:
                return Listing("domains", self.service.page("domains", self.org.domain_list(), query))
            return Listing("users", self.service.page("users", self.org.user_list(), query))
        except BadRequest as exc:
            return error_reply(400, str(exc))

    def records_for(self, object_type: str, name: str, start: str = "", end: str = "~") -> List[Record]:
        """The trail the audits endpoint scopes for this query now, oldest first, before paging."""
        return self.org.records_for(object_type, name, int(self._clock() * 1_000_000), start, end)

    def _audits(self, query: Query) -> List[Record]:
        self.service.check_audit_params(query)
        object_type, name, prefix = (one(query, k) for k in ("object_type", "name", "filter"))
        if object_type not in ("user", "domain"):
            raise BadRequest("object_type must be user or domain")
        records = self._scope(object_type, name or "", query)
        if prefix:  # a "starts with" match, as the product's activity search does
            records = [r for r in records if r["filterable_action"].startswith(prefix)]
        return self.service.order(records, query)

    def _scope(self, object_type: str, name: str, query: Query) -> List[Record]:
        """The records a query names, or what a name-less query gets from this service."""
        bounds = self.service.time_bounds(query)
        if name:
            records = self.records_for(object_type, name, *bounds)
            if self.service.case_sensitive_names:
                field = "user" if object_type == "user" else "object"
                records = [r for r in records if r.get(field) == name]
            return records
        nameless = self.service.nameless
        if nameless == "refuse":
            raise BadRequest("name is required")
        if nameless == "empty":
            return []
        if nameless == "one-trail":
            first = self.org.users[0].email if object_type == "user" else self.org.domains[0].name
            return self.records_for(object_type, first, *bounds)
        return self.records_for(object_type, "", *bounds)  # org-wide
