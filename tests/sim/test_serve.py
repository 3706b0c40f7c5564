"""`audit-forwarder simulate` passes its knobs to the simulator: a rate limit, and how a query
without ``name`` is answered."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import requests

from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET


def test_simulate_serves_nameless_queries_and_a_rate_limit_when_asked():
    command = [
        sys.executable,
        "-m",
        "forwarder",
        "simulate",
        "--port",
        "0",
        "--max-rps",
        "0.5",
        "--nameless",
        "org-wide",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline()).group(0)
        form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
        token = requests.post(f"{url}/v1/ep/token", data=form, timeout=10).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}

        def nameless():
            return requests.get(
                f"{url}/v1/cp/audits", params={"object_type": "user"}, headers=headers, timeout=10
            )

        refused = nameless()  # the token took the one request of the burst
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "2"
        time.sleep(int(refused.headers["Retry-After"]))  # what a client is told to wait, no less
        served = nameless()
        assert served.status_code == 200
        assert len({record["user"] for record in served.json()["audits"]}) > 1  # every user's records
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
