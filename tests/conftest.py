"""Shared fixtures: a real moto server over loopback HTTP for every AWS test, a real rsyslogd for the
syslog and RELP sink tests, and the backoff pauses a client or sink asks for (``waits``). Also the
hypothesis profile: no per-example deadline, since tests assert behaviour, never time, and a loaded
2-core machine must not fail them."""

from __future__ import annotations

import os
import shutil
from typing import Iterator

import pytest
import requests
from hypothesis import settings

settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """A moto server on a free loopback port for the whole session; yields its URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{server._server.server_port}"  # type: ignore[union-attr]
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture
def aws(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Point boto3 at the moto server with throwaway credentials; every test starts empty."""
    requests.post(f"{moto_server}/moto-api/reset", timeout=10).raise_for_status()
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    yield moto_server


@pytest.fixture
def tls(tmp_path, monkeypatch):
    """A server context for 127.0.0.1 and a CA the client trusts (REQUESTS_CA_BUNDLE)."""
    pytest.importorskip("cryptography")  # not in the Python 3.9 pure-Python pass
    import ssl

    from tests.syslog.rsyslog import make_certificates

    make_certificates(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "ca.pem"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.pem", tmp_path / "server-key.pem")
    return context


@pytest.fixture
def hec() -> Iterator[object]:
    """The test HEC receiver on a free loopback port, taking the e2e helpers' token."""
    from tests.e2e.helpers import HEC_TOKEN
    from tests.receivers.hec import HecReceiver

    with HecReceiver(token=HEC_TOKEN) as receiver:
        yield receiver


@pytest.fixture
def waits():
    """Every backoff pause a client or sink asks for, instead of sleeping: hand it in as a retry
    policy's ``sleep`` or a run's ``pace``."""
    from tests.fakes import Waits

    return Waits()


def _started_rsyslog(directory, inputs=None):
    from tests.syslog.rsyslog import Rsyslog

    if not (shutil.which("rsyslogd") or shutil.which("rsyslogd", path="/usr/sbin")):
        pytest.fail("rsyslogd is not installed: run tests/syslog/install-rsyslog.sh (make test does)")
    server = Rsyslog(directory) if inputs is None else Rsyslog(directory, inputs)
    server.start()
    return server


@pytest.fixture(scope="module")
def rsyslog(tmp_path_factory):
    """A real rsyslogd for the syslog sink tests, one per module."""
    server = _started_rsyslog(tmp_path_factory.mktemp("rsyslog"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def relp_rsyslog(tmp_path):
    """rsyslogd with a RELP input (``relp``) and a RELP-over-TLS one (``relptls``), for one test."""
    server = _started_rsyslog(tmp_path / "rsyslog", ("relp", "relptls"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def logging_as_found() -> Iterator[None]:
    """Each test leaves the root logger as it found it: a run that configures logging (the Lambda
    handler, the CLI) sets the root level and handlers, which would filter what a later test's caplog
    sees."""
    import logging

    root, noisy = logging.getLogger(), logging.getLogger("urllib3")
    handlers, level, noisy_level = list(root.handlers), root.level, noisy.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    noisy.setLevel(noisy_level)


@pytest.fixture(autouse=True)
def retries_told_afresh() -> None:
    """Each test sees its first retry of a kind at WARNING (forwarder.retry tells one once a minute)."""
    from forwarder import retry

    retry.reset_notices()


@pytest.fixture(autouse=True)
def no_token_from_an_earlier_test() -> Iterator[None]:
    """Each test starts with no reusable access token, as a new process would. Runs in one process
    reuse a token for the same API and client id (a warm Lambda, run --interval); across tests the
    next simulator can get the same loopback port, reject the last one's token, and cost a run one
    request more than the test counts."""
    from forwarder.api import token

    with token._reusable_lock:
        token._reusable.clear()
    yield
