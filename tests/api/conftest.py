"""Fixtures the API transport tests share."""

from __future__ import annotations

import ssl

import pytest


@pytest.fixture
def tls(tmp_path, monkeypatch):
    """A server context for 127.0.0.1 and a CA the client trusts (REQUESTS_CA_BUNDLE)."""
    pytest.importorskip("cryptography")  # not in the Python 3.9 pure-Python pass
    from tests.syslog.rsyslog import make_certificates

    make_certificates(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "ca.pem"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.pem", tmp_path / "server-key.pem")
    return context
