"""HTTP session set-up shared by the API client and the HTTP sinks."""

from __future__ import annotations

import requests

from . import __version__

USER_AGENT = f"emailauth-audit-forwarder/{__version__}"
DEFAULT_TIMEOUT = (10.0, 60.0)  # connect, read


def new_session() -> requests.Session:
    session = requests.Session()
    session.headers["User-Agent"] = USER_AGENT
    session.trust_env = True  # honour HTTPS_PROXY / REQUESTS_CA_BUNDLE as operators expect
    return session
