"""HTTP session set-up shared by the API client and the HTTP sinks."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

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


def check_url(url: str, what: str, secure_scheme: str = "https") -> str | None:
    """Return a problem with ``url`` (naming ``what``), or None. Plain HTTP only for loopback."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        return f"{what}: must be an absolute URL like {secure_scheme}://host (got {redact_url(url)!r})"
    if parts.username or parts.password:
        return f"{what}: must not carry credentials in the URL"
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
