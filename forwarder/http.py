"""HTTP session set-up shared by the API client and the HTTP sinks."""

from __future__ import annotations

import os
from typing import Optional

import requests

from . import __version__
from .transport import watched

USER_AGENT = f"emailauth-audit-forwarder/{__version__}"
DEFAULT_TIMEOUT = (10.0, 60.0)  # connect, read


def new_session(proxy: Optional[str] = None) -> requests.Session:
    """A session whose every connection, direct or through a proxy, the deadline watchdog can cut
    (``deadline.request``). ``proxy``: the URL every request goes through, "" for none, instead of
    the environment's HTTPS_PROXY / NO_PROXY (None: those, as operators expect)."""
    session = requests.Session()
    for prefix in ("https://", "http://"):
        session.mount(prefix, watched.WatchedAdapter())
    session.headers["User-Agent"] = USER_AGENT
    session.trust_env = proxy is None  # honour HTTPS_PROXY / REQUESTS_CA_BUNDLE as operators expect
    if proxy:
        session.proxies = {"https": proxy, "http": proxy}
    return session


def pin_environment(session: requests.Session, url: str) -> None:
    """Read the environment's proxy (HTTPS_PROXY, NO_PROXY; unless the session was given its own)
    and CA bundle (REQUESTS_CA_BUNDLE) settings for ``url`` once, instead of on every request as
    requests does: that scan was a third of the client's CPU per API call. ~/.netrc is no longer
    consulted (the API sends its own token)."""
    if session.trust_env:
        for scheme, proxy in requests.utils.get_environ_proxies(url).items():
            session.proxies.setdefault(scheme, proxy)
    if session.verify is True:
        session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    session.trust_env = False
