"""A real rsyslogd for the syslog sink tests, one per module (install: tests/syslog/install-rsyslog.sh)."""

from __future__ import annotations

import shutil

import pytest

from .rsyslog import Rsyslog


@pytest.fixture(scope="module")
def rsyslog(tmp_path_factory):
    if not (shutil.which("rsyslogd") or shutil.which("rsyslogd", path="/usr/sbin")):
        pytest.fail("rsyslogd is not installed: run tests/syslog/install-rsyslog.sh (make test does)")
    server = Rsyslog(tmp_path_factory.mktemp("rsyslog"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
