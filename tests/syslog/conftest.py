"""A real rsyslogd for the syslog sink tests, one per module, and one with RELP inputs per RELP test
(install: tests/syslog/install-rsyslog.sh)."""

from __future__ import annotations

import shutil

import pytest

from tests.sinks.conftest import waits  # noqa: F401 - the sink tests' fixture, shared

from .rsyslog import Rsyslog


def _started(directory, inputs=None):
    if not (shutil.which("rsyslogd") or shutil.which("rsyslogd", path="/usr/sbin")):
        pytest.fail("rsyslogd is not installed: run tests/syslog/install-rsyslog.sh (make test does)")
    server = Rsyslog(directory) if inputs is None else Rsyslog(directory, inputs)
    server.start()
    return server


@pytest.fixture(scope="module")
def rsyslog(tmp_path_factory):
    server = _started(tmp_path_factory.mktemp("rsyslog"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def relp_rsyslog(tmp_path):
    """rsyslogd with a RELP input (``relp``) and a RELP-over-TLS one (``relptls``), for one test."""
    server = _started(tmp_path / "rsyslog", ("relp", "relptls"))
    try:
        yield server
    finally:
        server.stop()
