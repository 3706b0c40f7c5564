"""A sink or API that cannot be reached is told in one line per cause, naming what to check, whatever
the number of streams it fails: whole runs of the CLI against the simulator, each with a loopback peer
that refuses, never answers, or answers 403."""

from __future__ import annotations

import json
from typing import Dict, List

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from tests.e2e.helpers import HEC_TOKEN, cli, env_for
from tests.receivers.hec import HecReceiver
from tests.receivers.silent import Silent, closed_port

LIBRARY_WORDS = ("Max retries", "urllib3", "ConnectionPool", "NewConnectionError", "Caused by", "Errno")


@pytest.fixture(scope="module")
def sim():
    with Simulator(generate_org(2)) as s:
        yield s


def run(sim: Simulator, tmp_path, sink: str, **extra: str) -> Dict[str, object]:
    env = env_for(
        sim.base_url,
        sink,
        str(tmp_path / "state"),
        FORWARDER_LOG_FORMAT="text",
        FORWARDER_MAX_ATTEMPTS="2",
        FORWARDER_HTTP_TIMEOUT="1",
        **extra,
    )
    result = cli("run", "--report", env=env)
    lines = result.stderr.splitlines()
    report = json.loads(next(line for line in lines if line.startswith('{"ok"')))
    return {"code": result.returncode, "lines": [x for x in lines if not x.startswith("{")], "report": report}


def logged(lines: List[str]) -> List[str]:
    """The log lines (not the summary table)."""
    return [x for x in lines if x.startswith(("warning:", "error:"))]


def failed_streams(report) -> int:
    return report["totals"]["failed_streams"]


def test_a_refused_connection_is_one_warning_and_one_error_naming_FORWARDER_SINK(sim, tmp_path):
    with closed_port() as port:
        out = run(sim, tmp_path, f"hec+http://127.0.0.1:{port}")
    assert out["code"] == 1
    lines = logged(out["lines"])
    assert failed_streams(out["report"]) > 1  # many streams failed alike ...
    assert len(lines) == 2, lines  # ... told once: the first retry, then the failure with the count
    assert lines[0].startswith("warning: POST to Splunk HEC failed, retrying")
    n = failed_streams(out["report"])
    assert lines[1].startswith(f"error: {n} streams failed (error=Splunk HEC: 127.0.0.1:{port} refused the")
    assert "check the host and port in FORWARDER_SINK" in lines[1]
    text = "\n".join(out["lines"])
    assert not any(word in text for word in LIBRARY_WORDS)
    # the summary's table: one row for the cause, with the count
    rows = [
        x for x in out["lines"] if "refused the connection" in x and not x.startswith(("warning", "error"))
    ]
    assert len(rows) == 1 and rows[0].lstrip().startswith(f"{n} streams (")
    assert out["report"]["failures"] == [
        {
            "error": out["report"]["streams"][0]["error"],
            "streams": n,
            "first": out["report"]["streams"][0]["stream"],
        }
    ]


def test_a_peer_that_never_answers_is_not_called_refused(sim, tmp_path):
    with Silent() as peer:
        out = run(sim, tmp_path, f"hec+http://127.0.0.1:{peer.port}")
    assert out["code"] == 1
    lines = logged(out["lines"])
    assert len(lines) == 2, lines
    # the read timeout or the total deadline, whichever ends the wait first
    assert f"127.0.0.1:{peer.port}: no complete response within 1 s (HTTP timeout) after 2 att" in lines[1]
    assert "FORWARDER_HTTP_TIMEOUT" in lines[1] and "FORWARDER_SINK" in lines[1]
    text = "\n".join(out["lines"])
    assert "refused" not in text
    assert not any(word in text for word in LIBRARY_WORDS)


def test_a_403_names_FORWARDER_SINK_TOKEN_once(sim, tmp_path):
    with HecReceiver(token="another-token-than-ours") as hec:
        out = run(sim, tmp_path, hec.url)
        assert not hec.events()
    lines = logged(out["lines"])
    n = failed_streams(out["report"])
    assert n > 1 and len(lines) == 1, lines  # not retried: no warning
    assert lines[0].startswith(f"error: {n} streams failed (error=Splunk HEC refused the batch: HTTP 403")
    assert "check FORWARDER_SINK_TOKEN" in lines[0]
    assert HEC_TOKEN not in "\n".join(out["lines"])


def test_an_unreachable_api_names_FORWARDER_API_URL(sim, tmp_path):
    with closed_port() as port, HecReceiver(token=HEC_TOKEN) as hec:
        out = run(sim, tmp_path, hec.url, FORWARDER_API_URL=f"http://127.0.0.1:{port}")
    assert out["code"] == 1
    lines = logged(out["lines"])
    assert len(lines) == 2, lines
    assert lines[1].startswith(
        f"error: run failed (error=the token endpoint http://127.0.0.1:{port}/v1/ep/token "
        "(FORWARDER_API_URL, "
        f"FORWARDER_TOKEN_PATH): 127.0.0.1:{port} refused the connection"
    )
    assert "check the host and port in FORWARDER_API_URL" in lines[1]
    assert not any(word in "\n".join(out["lines"]) for word in LIBRARY_WORDS)


def test_an_api_that_never_answers_is_not_called_refused(sim, tmp_path):
    with Silent() as peer, HecReceiver(token=HEC_TOKEN) as hec:
        out = run(sim, tmp_path, hec.url, FORWARDER_API_URL=peer.url)
    lines = logged(out["lines"])
    assert len(lines) == 2, lines
    assert "HTTP timeout" in lines[1] and "FORWARDER_API_URL" in lines[1]
    assert "refused" not in "\n".join(out["lines"])
