"""Importing the watched transport checks every urllib3, requests and PySocks hook it overrides or
sets: in a library that lacks one, it stops naming the library, its version and the hook. (What the
watched connections do is tested through real proxies and peers in tests/test_deadline.py and
tests/hostile.)"""

from __future__ import annotations

import pytest
import requests
import socks
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPSConnection

from forwarder.transport import watched
from forwarder.transport.hooks import problems
from tests.transport.sabotage import outcome

URLLIB3 = f"urllib3 {urllib3.__version__} is not a version"
REQUESTS = f"requests {requests.__version__} is not a version"


def test_the_installed_libraries_have_every_hook():
    assert problems(watched._urllib3_hooks(HTTPSConnection("localhost", 443))) == []
    assert problems(watched._requests_hooks(HTTPAdapter())) == []
    assert set(watched._socks_pools()) == {"http", "https"}


@pytest.mark.parametrize(
    ("change", "told"),
    [
        (
            "import urllib3.connection as c; remove(c.HTTPConnection, '_new_conn')",
            (URLLIB3, "._new_conn is missing"),
        ),
        (
            "import urllib3.connection as c; remove(c.HTTPConnection, '_tunnel')",
            (URLLIB3, "._tunnel is missing"),
        ),
        (
            "import urllib3.connection as c; remove(c.HTTPConnection, 'connect')",
            (URLLIB3, ".connect is missing"),
        ),
        (
            "import urllib3.connection as c; c.HTTPConnection._new_conn = lambda self, timeout: None",
            (URLLIB3, "._new_conn takes (self, timeout), not (self)"),
        ),
        (
            "import urllib3.connectionpool as p; remove(p.HTTPConnectionPool, '_put_conn')",
            (URLLIB3, "_put_conn"),
        ),
        (
            "import urllib3.connectionpool as p; p.HTTPConnectionPool._put_conn = lambda self: None",
            (URLLIB3, "._put_conn takes (self), not (self, conn)"),
        ),
        (
            # a version whose connections keep the tunnel's host under another name
            "import urllib3.connection as c\ninit = c.HTTPConnection.__init__\n"
            "def renamed(self, *a, **k):\n    init(self, *a, **k)\n    del self._tunnel_host\n"
            "c.HTTPConnection.__init__ = renamed",
            (URLLIB3, "HTTPSConnection._tunnel_host is missing"),
        ),
        (
            "import requests.adapters as a; remove(a.HTTPAdapter, 'proxy_manager_for')",
            (REQUESTS, "proxy_manager_for"),
        ),
        (
            "import requests.adapters as a; remove(a.HTTPAdapter, 'build_response')",
            (REQUESTS, "build_response"),
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else value[1],
)
def test_importing_the_transport_stops_when_a_hook_is_gone(change, told):
    ran = outcome(change, "import forwarder.http")
    assert ran.returncode != 0
    assert "UnsupportedLibrary" in ran.stderr and all(part in ran.stderr for part in told), ran.stderr


def test_the_first_socks_proxy_stops_when_pysocks_lost_its_hook():
    ran = outcome(
        "import socks; del socks.DEFAULT_PORTS",
        "from forwarder.transport import watched\nwatched._socks_pools()",
    )
    assert ran.returncode != 0
    version = getattr(socks, "__version__", "(unknown version)")
    assert (
        f"PySocks {version} is not a version" in ran.stderr and "socks.DEFAULT_PORTS is missing" in ran.stderr
    )
