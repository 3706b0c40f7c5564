"""The platform API client: authenticated GETs with retries, and the audits and users endpoints."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Dict, List, Mapping, Optional, Set, Union
from urllib.parse import urlencode

import requests

from .. import causes, deadline, jsonutil, retry
from ..errors import ApiError, AuthError, MalformedResponse
from ..http import DEFAULT_TIMEOUT, new_session, pin_environment
from ..logs import clip
from ..reading.pages import Feedback, Tally, iter_pages, pages_to_ceiling
from ..retry import RETRYABLE_STATUS, RetryPolicy, parse_retry_after
from ..streams import Stream
from ..urls import host_port
from .envelope import extract_items
from .ratelimit import RateLimiter
from .token import TokenProvider, parse_token, reuse_key, token_endpoint

log = logging.getLogger(__name__)

AUDITS_PATH = "/v1/cp/audits"
USERS_PATH = "/v1/ep/users"
DOMAINS_PATH = "/v1/cp/domains"  # not in the spec: used only with FORWARDER_DISCOVER_DOMAINS
# Optional parameters, in the order they are given up when the service answers 400 to them.
_OPTIONAL = ("sort", "end_date", "start_date", "limit", "offset")


@dataclass(frozen=True)
class Cap:
    """The most elements a listing may hold, the setting that says so, and the one that lists them."""

    most: int
    setting: str
    listed_in: str


@dataclass
class Credentials:
    client_id: str
    client_secret: str = field(repr=False)


def _error_text(response: requests.Response) -> str:
    """A short description of an error response, from the documented error body when present."""
    try:
        body = jsonutil.loads(response.content)
    except ValueError:
        body = None
    if isinstance(body, dict):
        parts = [str(body[k]) for k in ("error", "error_description", "message") if body.get(k)]
        if parts:
            return clip(": ".join(parts), 300)
    return clip((response.text or response.reason or "").strip())


# What to check when the API refuses a GET (its token was accepted).
_GET_HINTS = {
    403: "; the API client (FORWARDER_CLIENT_ID) may not read this: check its roles in the portal",
    404: "; check FORWARDER_API_URL (the API's base URL, without /v1)",
}


def unreachable(who: str, cause: causes.Cause, attempts: int = 1) -> str:
    """``the API (GET /v1/cp/audits): <cause> after 5 attempts; check FORWARDER_API_URL ...``."""
    return causes.explain(who, cause, attempts, "FORWARDER_API_URL", "REQUESTS_CA_BUNDLE")


class ApiClient:
    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        token_path: str = "/v1/ep/token",
        timeout: float = DEFAULT_TIMEOUT[1],
        retry: Optional[RetryPolicy] = None,
        session: Optional[requests.Session] = None,
        limiter: Optional[RateLimiter] = None,
        proxy: Optional[str] = None,
    ) -> None:
        """``proxy``: see ``http.new_session`` (for a session of the client's own)."""
        self.base_url = base_url.rstrip("/")
        self._credentials = credentials
        self._token_path = token_path
        self._timeout = (min(DEFAULT_TIMEOUT[0], timeout), timeout)
        self._retry = retry or RetryPolicy()
        if session is None:
            session = new_session(proxy)
            pin_environment(session, self.base_url)  # one base URL: its proxy cannot change mid-run
        self._session = session
        self._limiter = limiter or RateLimiter(sleep=self._retry.sleep)
        self._tokens = TokenProvider(
            self._request_token,
            key=reuse_key(self.base_url + token_path, credentials.client_id, credentials.client_secret),
            endpoint=self._token_endpoint(),
        )
        self._unsupported: set[tuple[str, str]] = set()  # optional parameters the service rejected this run
        self._lock = threading.Lock()  # requests_sent and _unsupported: every stream thread shares the client
        self.requests_sent = 0  # every HTTP request to the API, retries included (for progress displays)

    def __repr__(self) -> str:
        return f"ApiClient({self.base_url!r}, client_id={self._credentials.client_id!r})"

    def close(self) -> None:
        self._session.close()

    def authenticate(self) -> None:
        """Get a token now (for `check`); raises AuthError when the credentials are refused."""
        self._tokens.get()

    def request_token(self) -> None:
        """Ask the token endpoint now, even if a token is cached (a credential check before saving)."""
        parse_token(self._request_token(), time.time(), self._token_endpoint())

    # -- transport ------------------------------------------------------------------------------

    def _send(self, method: str, path: str, who: str = "", **kwargs: Any) -> requests.Response:
        """One request with retries on 429/5xx and every transport error; other statuses are returned
        (so is the last 429/5xx once the attempts run out). The whole response is bounded by the
        HTTP timeout, not only each read. ``who`` names the endpoint when it cannot be reached."""
        url = self.base_url + path
        who = who or f"the API ({method} {path})"

        def attempt() -> requests.Response:
            with self._lock:
                self.requests_sent += 1
            try:
                with self._limiter.request():
                    response = deadline.request(
                        self._session,
                        method,
                        url,
                        timeout=self._timeout,
                        deadline_s=self._timeout[1],
                        **kwargs,
                    )
            except requests.exceptions.SSLError as exc:  # a certificate problem does not heal by waiting
                raise ApiError(unreachable(who, causes.of(exc, where))) from None
            if response.status_code in RETRYABLE_STATUS:
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                raise retry.TryAgain(f"HTTP {response.status_code}", retry_after, response)
            return response

        def give_up(failure: retry.Failure) -> requests.Response:
            if failure.last is not None:
                return failure.last.result
            if failure.cause is not None:
                raise ApiError(unreachable(who, failure.cause, failure.attempts))
            raise ApiError(f"{method} {path}: {failure.problem} (after {failure.attempts} attempts)")

        def wait(delay: float, failure: retry.Failure) -> None:
            if failure.last is not None and failure.last.result.status_code == 429:
                self._limiter.throttled(delay)  # every stream waits and fewer run at once
            else:
                self._retry.wait(delay)

        where = host_port(url)
        return retry.call(self._retry, attempt, give_up, f"api {method} {path}", wait, where)

    def _token_endpoint(self) -> str:
        return token_endpoint(self.base_url + self._token_path)

    def _request_token(self) -> Any:
        form = {"client_id": self._credentials.client_id, "client_secret": self._credentials.client_secret}
        headers = {"Accept": "application/json"}
        # Unreachable, it is named by its URL and the settings that make it (FORWARDER_TOKEN_PATH too).
        who = self._token_endpoint()
        response = self._send("POST", self._token_path, who, data=form, headers=headers)
        if response.status_code == 400:
            # The spec's form has no grant_type, but OAuth-style token endpoints insist on it.
            form["grant_type"] = "client_credentials"
            response = self._send("POST", self._token_path, who, data=form, headers=headers)
        if response.status_code in (400, 401, 403):
            raise AuthError(
                f"token request refused (HTTP {response.status_code}: {_error_text(response)}); "
                "check FORWARDER_CLIENT_ID / FORWARDER_CLIENT_SECRET",
                status=response.status_code,
            )
        if response.status_code in (404, 405):
            raise ApiError(
                f"no token endpoint at {self._token_path} (HTTP {response.status_code}); "
                "check FORWARDER_API_URL and FORWARDER_TOKEN_PATH",
                response.status_code,
            )
        if response.status_code != 200:
            raise ApiError(
                f"token request failed: HTTP {response.status_code}: {_error_text(response)}, "
                f"from {self._token_endpoint()}",
                response.status_code,
            )
        return self._decode(response, self._token_path)

    def _decode(self, response: requests.Response, path: str) -> Any:
        try:
            return jsonutil.loads(response.content)
        except ValueError as exc:
            kind = response.headers.get("Content-Type", "unknown content type")
            raise MalformedResponse(
                f"GET {path}: HTTP {response.status_code} body is not JSON "
                f"({clip(kind)}, {len(response.content)} bytes: {clip(str(exc))})"
            ) from None

    def get_json(self, path: str, params: Mapping[str, Union[str, int]]) -> Any:
        """An authenticated GET; a 401 refreshes the token once and retries."""
        token = self._tokens.get()
        # The query requests would make of the mapping, made here: given a mapping, requests 2.34 checks
        # it against typing Protocols several times a call (runtime isinstance, 4-9 us each).
        query = urlencode(params)
        for refreshed in (False, True):
            response = self._send(
                "GET",
                path,
                params=query,
                headers={"Accept": "application/json", "Authorization": f"Bearer {token}"},
            )
            if response.status_code == 401 and not refreshed:
                log.info("token rejected, fetching a new one", extra={"path": path})
                token = self._tokens.refresh(token)
                continue
            if response.status_code == 401:
                raise AuthError(
                    f"GET {path}: a fresh token was refused too (HTTP 401: {_error_text(response)})", 401
                )
            if response.status_code == 204:
                return []
            if response.status_code != 200:
                check = _GET_HINTS.get(response.status_code, "")
                raise ApiError(
                    f"GET {path}: HTTP {response.status_code}: {_error_text(response)}{check}",
                    response.status_code,
                )
            return self._decode(response, path)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- endpoints ------------------------------------------------------------------------------

    def _get_with_fallback(
        self, path: str, base: Dict[str, Any], optional: Dict[str, Any], fallback: bool = True
    ) -> Any:
        """GET with optional parameters. On a 400 (when ``fallback``), drop the ones the error names,
        or else the first still sent, for the rest of the run, and ask again."""
        while True:
            with self._lock:
                active = [n for n in _OPTIONAL if n in optional and (path, n) not in self._unsupported]
            params = {**base, **{name: optional[name] for name in active}}
            try:
                return self.get_json(path, params)
            except ApiError as exc:
                if exc.status != 400 or not active or not fallback:
                    raise
                named = [n for n in active if n in str(exc)]
                dropped = named or active[:1]
                with self._lock:
                    new = [n for n in dropped if (path, n) not in self._unsupported]
                    self._unsupported.update((path, n) for n in dropped)
                if new:
                    log.warning(
                        "api rejected an optional parameter; not sending it again this run",
                        extra={"path": path, "parameter": ",".join(new), "error": str(exc)},
                    )

    def sends(self, path: str, parameter: str) -> bool:
        """Whether an optional parameter is still sent to ``path`` (the service has not refused it)."""
        with self._lock:
            return (path, parameter) not in self._unsupported

    def page(
        self,
        path: str,
        plural: str,
        base: Dict[str, Any],
        optional: Dict[str, Any],
        limit: Optional[int],
        offset: Optional[int],
    ) -> List[Any]:
        """One page of a list endpoint. ``optional`` parameters are sent while the service accepts them.
        Past the first page the parameters are known to be accepted: a 400 there is the service's
        offset ceiling, not a parameter to give up, and is raised."""
        extra = dict(optional)
        if limit is not None:
            extra.update(limit=limit, offset=offset or 0)
        return extract_items(self._get_with_fallback(path, base, extra, fallback=not offset), plural)

    def audits(
        self, stream: Stream, optional: Dict[str, Any], limit: Optional[int], offset: Optional[int]
    ) -> List[Any]:
        """One page of ``stream``'s audit trail (``page`` for the audits endpoint)."""
        base: Dict[str, Any] = {"object_type": stream.object_type, "name": stream.name}
        if stream.filter:
            base["filter"] = stream.filter
        return self.page(AUDITS_PATH, "audits", base, optional, limit, offset)

    def listing(
        self, path: str, plural: str, limit: int, max_pages: int, cap: Optional[Cap] = None
    ) -> List[Any]:
        """Every element of a list endpoint (users, domains), each once. A page that brings no element
        not read before ends the listing (a service that ignores offset, or cycles through its pages);
        more elements than ``cap`` allows fail it (a service listing new ones at every offset)."""
        tally = Tally()
        items: List[Any] = []
        seen: Set[str] = set()
        pages = pages_to_ceiling(
            iter_pages(partial(self.page, path, plural, {}, {}), limit, max_pages, tally), tally
        )
        try:
            page = next(pages)
            while True:
                before = len(seen)
                for item in page.items:
                    text = jsonutil.ascii_text(item)  # any item: one with a lone surrogate is skipped later
                    if text not in seen:
                        seen.add(text)
                        items.append(item)
                if cap is not None and len(items) > cap.most:
                    raise ApiError(
                        f"GET {path} lists more than {cap.most} {plural} ({cap.setting}): raise it, "
                        f"or name the {plural} to pull in {cap.listed_in}"
                    )
                page = pages.send(Feedback(added=len(seen) - before))  # 0 ends the paging
        except StopIteration:
            pass
        if tally.truncated:  # keep what was read rather than fail the whole run
            log.warning(
                "paging stopped before the end",
                extra={"path": path, "items": len(items), "reason": tally.reason},
            )
        return items

    def users(self, limit: int, max_pages: int, max_users: int) -> List[Any]:
        """Every user of the users endpoint; ApiError naming FORWARDER_MAX_USERS past ``max_users``."""
        cap = Cap(max_users, "FORWARDER_MAX_USERS", "FORWARDER_USERS")
        return self.listing(USERS_PATH, "users", limit, max_pages, cap)

    def domains(self, limit: int, max_pages: int) -> List[Any]:
        return self.listing(DOMAINS_PATH, "domains", limit, max_pages)
