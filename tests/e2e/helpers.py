"""Settings for end-to-end runs against the simulator and the test HEC receiver."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any, Dict, Iterable, List, Optional

from forwarder.config import Settings, load_settings
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET

HEC_TOKEN = "5ec12e7a-0000-4000-8000-00000000cafe"


def env_for(api_url: str, sink: str, state: str, **extra: str) -> Dict[str, str]:
    env = {
        "FORWARDER_API_URL": api_url,
        "FORWARDER_CLIENT_ID": DEMO_CLIENT_ID,
        "FORWARDER_CLIENT_SECRET": DEMO_CLIENT_SECRET,
        "FORWARDER_STATE": state,
        "FORWARDER_QUARANTINE": state + "-quarantine",
        "FORWARDER_SINK": sink,
        "FORWARDER_SINK_TOKEN": HEC_TOKEN,
        "FORWARDER_INITIAL_LOOKBACK": "13mo",
        "FORWARDER_BATCH_EVENTS": "50",
        # the sink holds the audit events alone; tests of the health event turn it on
        "FORWARDER_HEALTH_EVENTS": "false",
    }
    env.update(extra)
    return env


def settings_for(api_url: str, sink: str, state: str, **extra: str) -> Settings:
    return load_settings(env_for(api_url, sink, state, **extra))


def canonical_id(record: Dict[str, Any]) -> str:
    """The event id computed independently of forwarder.jsonutil: the spec's definition."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def expected_ids(records: Iterable[Dict[str, Any]]) -> List[str]:
    return sorted({canonical_id(r) for r in records})


def _only(env: Optional[Dict[str, str]]) -> Dict[str, str]:
    """This process's environment with only ``env``'s FORWARDER_* variables."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_")}
    full.update(env or {})
    return full


def cli(*args: str, env: Optional[Dict[str, str]] = None, cwd: Any = None) -> subprocess.CompletedProcess:
    """``audit-forwarder <args>`` in a subprocess with only ``env``'s FORWARDER_* variables."""
    return subprocess.run(
        [sys.executable, "-m", "forwarder", *args],
        env=_only(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def cli_process(*args: str, env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
    """``cli`` started, not awaited: its output in pipes, as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "forwarder", *args],
        env=_only(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def quiet_users(org: Any, n: int = 2) -> List[str]:
    """The ``n`` users of a simulated organization with the fewest records: tenants that keep a
    test or benchmark about streams, not about normalizing thousands of records."""
    from forwarder.timeutil import now_us

    counts = {u.email: len(org.records_for("user", u.email, now_us())) for u in org.users}
    return sorted(counts, key=lambda e: (counts[e], e))[:n]


def ids_by_index(envelopes: Iterable[Dict[str, Any]]) -> Dict[str, List[str]]:
    """Event ids as a HEC receiver got them, by Splunk index (one index per tenant)."""
    found: Dict[str, List[str]] = {}
    for envelope in envelopes:
        found.setdefault(envelope["index"], []).append(envelope["event"]["event"]["id"])
    return found


def expected_for_users(org: Any, users: Iterable[str]) -> List[str]:
    """The ids of every record of these users' streams: what a full pull of them delivers."""
    from forwarder.timeutil import now_us

    return expected_ids(r for u in users for r in org.records_for("user", u, now_us()))
