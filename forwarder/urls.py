"""URL checks for configuration and messages: absolute, https (plain http for loopback only), no
secret in a URL, and a form safe to show. Free of ``requests`` so the configuration check stays light."""

from __future__ import annotations

import ipaddress
import re
from typing import Tuple
from urllib.parse import parse_qsl, unquote, urlsplit

from .logs import clip, quoted


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# Query parameter names that carry a secret (?token=, ?api_key=, ?sig=, ?password=, ...).
_SECRET_PARAM = re.compile(r"token|key|secret|pass|pwd|auth|sig|credential|session", re.IGNORECASE)


def secret_in_url(url: str) -> str | None:
    """What is wrong when ``url`` carries a secret anywhere a URL is shown: user-info, a query
    parameter named like a secret, a fragment. Secrets belong in their own variables, which are masked."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return "must not carry credentials (user:password@) in the URL"
    named = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(name)]
    if named:
        return (
            f"the query parameter {quoted(named[0])} looks like a secret; put secrets in "
            "FORWARDER_SINK_TOKEN or FORWARDER_SINK_HEADERS, never in a URL"
        )
    if parts.fragment:
        return "a URL fragment (#...) is not allowed"
    return None


def url_problem(url: str, secure_scheme: str = "https") -> str | None:
    """What is wrong with ``url`` as a peer's address, or None. Plain HTTP only for loopback."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        return f"must be an absolute URL like {secure_scheme}://host (got {quoted(redact_url(url))})"
    problem = secret_in_url(url)
    if problem or parts.scheme == secure_scheme:
        return problem
    if parts.scheme == "http" and is_loopback(parts.hostname):
        return None
    return f"must use {secure_scheme}:// (plain http is allowed for loopback hosts only; got {clip(parts.scheme)}://)"


def check_url(url: str, what: str, secure_scheme: str = "https") -> str | None:
    """``url_problem``'s problem, naming ``what``."""
    problem = url_problem(url, secure_scheme)
    return f"{what}: {problem}" if problem else None


def redact_url(url: str) -> str:
    """The URL without user-info, query or fragment: safe to show in a message."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else url.split("?")[0].rpartition("@")[2]


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def location_scheme(location: str) -> str:
    """The scheme of a location (state, quarantine), lower case; ``file`` for a plain path."""
    match = _SCHEME.match(location)
    return match.group(1).lower() if match else "file"


def local_path(location: str) -> str:
    """The path a plain path or a ``file:`` URI names (``file:///abs``, ``file://localhost/abs``,
    ``file:relative``); ValueError for another host, a query or fragment, or no path at all."""
    if not location.lower().startswith("file:"):
        if not location:
            raise ValueError("empty: give a path")
        return location
    parts = urlsplit(location)
    if parts.netloc not in ("", "localhost"):
        raise ValueError(
            f"a file: URI names a path on this machine, not on {quoted(parts.netloc)}: use "
            "file:///absolute/path or a plain path"
        )
    if parts.query or parts.fragment:
        raise ValueError("a file: URI takes no query string or fragment")
    if not parts.path:
        raise ValueError("a file: URI must name a path, like file:///var/lib/audit-forwarder")
    return unquote(parts.path)


def parse_s3_uri(uri: str, what: str) -> Tuple[str, str]:
    """(bucket, prefix without end slashes) of ``s3://bucket/prefix``; ValueError naming ``what``."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"{what} for S3 must look like s3://bucket/prefix (got {quoted(uri)})")
    return parts.netloc, parts.path.strip("/")


def host_port(url: str) -> str:
    """``host:port`` of ``url`` (the scheme's default port when none is given), to name a peer."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    shown = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:
        port = None
    default = 443 if parts.scheme.lower().endswith("https") else 80
    return f"{shown}:{port or default}"
