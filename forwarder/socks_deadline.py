"""PySocks' side of the total deadline: pools for a SOCKS proxy (``socks5h://`` and the like, the
Splunk add-on's proxy setting) whose connections the watchdog of forwarder.deadline can reach.

Imported only when a session first uses a SOCKS proxy: requests needs PySocks for one, and urllib3's
SOCKS pools cannot be imported without it. The SOCKS handshake itself is bounded per read only.
"""

from __future__ import annotations

from urllib3.contrib.socks import (
    SOCKSConnection,
    SOCKSHTTPConnectionPool,
    SOCKSHTTPSConnection,
    SOCKSHTTPSConnectionPool,
)

from .deadline import Watched


class _Connection(Watched, SOCKSConnection):
    pass


class _TlsConnection(Watched, SOCKSHTTPSConnection):
    pass


class _Pool(SOCKSHTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(SOCKSHTTPSConnectionPool):
    ConnectionCls = _TlsConnection


POOLS = {"http": _Pool, "https": _TlsPool}
