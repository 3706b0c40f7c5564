"""`state show` and `state reset` as users run them (their runs against the simulator: tests/test_cli.py)."""

from __future__ import annotations

import json

from forwarder.state.local import open_local
from forwarder.state.model import StreamState
from forwarder.timeutil import now_us
from tests.e2e.helpers import cli


def test_state_show_marks_the_streams_of_the_org_wide_answers(tmp_path):
    store = open_local(str(tmp_path / "state"))
    for key in ("user/a@example.com", "user/*", "domain/*"):
        store.commit(key, StreamState(watermark_us=now_us() - 60_000_000, delivered_total=1), None)
    env = {"FORWARDER_STATE": str(tmp_path / "state")}
    shown = json.loads(cli("state", "show", "--json", env=env).stdout)["streams"]
    assert {s["stream"]: s.get("org_wide", False) for s in shown} == {
        "domain/*": True,
        "user/*": True,
        "user/a@example.com": False,
    }
