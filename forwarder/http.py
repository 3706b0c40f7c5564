"""HTTP session set-up shared by the API client and the HTTP sinks."""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import parse_qsl, urlsplit

import requests

from . import __version__

USER_AGENT = f"emailauth-audit-forwarder/{__version__}"
DEFAULT_TIMEOUT = (10.0, 60.0)  # connect, read


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# Query parameter names that carry a secret (?token=, ?api_key=, ?sig=, ?password=, ...).
_SECRET_PARAM = re.compile(r"token|key|secret|pass|pwd|auth|sig|credential|session", re.IGNORECASE)


def secret_problem(url: str, what: str) -> str | None:
    """A problem when ``url`` carries a secret anywhere a URL is shown: user-info, a query parameter
    named like a secret, a fragment. Secrets belong in their own variables, which are masked."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return f"{what}: must not carry credentials (user:password@) in the URL"
    named = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(name)]
    if named:
        return (
            f"{what}: the query parameter {named[0]!r} looks like a secret; put secrets in "
            "FORWARDER_SINK_TOKEN or FORWARDER_SINK_HEADERS, never in a URL"
        )
    if parts.fragment:
        return f"{what}: a URL fragment (#...) is not allowed"
    return None


def check_url(url: str, what: str, secure_scheme: str = "https") -> str | None:
    """Return a problem with ``url`` (naming ``what``), or None. Plain HTTP only for loopback."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        return f"{what}: must be an absolute URL like {secure_scheme}://host (got {redact_url(url)!r})"
    problem = secret_problem(url, what)
    if problem:
        return problem
    if parts.scheme == secure_scheme:
        return None
    if parts.scheme == "http" and is_loopback(parts.hostname):
        return None
    return f"{what}: must use {secure_scheme}:// (plain http is allowed for loopback hosts only; got {parts.scheme}://)"


def redact_url(url: str) -> str:
    """The URL without user-info, query or fragment: safe to show in a message."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else url.split("?")[0].rpartition("@")[2]


def new_session() -> requests.Session:
    session = requests.Session()
    session.headers["User-Agent"] = USER_AGENT
    session.trust_env = True  # honour HTTPS_PROXY / REQUESTS_CA_BUNDLE as operators expect
    return session


def pin_environment(session: requests.Session, url: str) -> None:
    """Read the environment's proxy (HTTPS_PROXY, NO_PROXY) and CA bundle (REQUESTS_CA_BUNDLE)
    settings for ``url`` once, instead of on every request as requests does: that scan was a third
    of the client's CPU per API call. ~/.netrc is no longer consulted (the API sends its own token)."""
    for scheme, proxy in requests.utils.get_environ_proxies(url).items():
        session.proxies.setdefault(scheme, proxy)
    if session.verify is True:
        session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    session.trust_env = False
