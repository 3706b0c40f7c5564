"""The simulator's life cycle and the simulate command."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import requests

from forwarder.sim.endpoints import USERS_PATH
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator


def test_stopped_simulator_refuses_connections(org):
    sim = Simulator(org)
    with sim:
        session = requests.Session()
        assert session.post(sim.base_url + sim.token_path, data={}, timeout=5).status_code == 400
    with pytest.raises(requests.ConnectionError):
        session.post(sim.base_url + sim.token_path, data={}, timeout=5)


def test_serve_prints_the_url_and_stops_on_ctrl_c():
    code = "import sys; from forwarder.sim.serve import serve; sys.exit(serve(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--port", "0", "--style", "bare"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = [proc.stdout.readline() for _ in range(5)]
        # the lines shown for pasting set the variables in a shell (plain NAME=value would not)
        pasted = subprocess.run(
            ["bash", "-c", "".join(banner[2:]) + "\nenv"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        shell = dict(line.split("=", 1) for line in pasted if line.startswith("FORWARDER_"))
        url = shell["FORWARDER_API_URL"]
        assert url.startswith("http://127.0.0.1:")
        assert shell["FORWARDER_CLIENT_SECRET"] == DEMO_CLIENT_SECRET
        form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
        bearer = requests.post(url + "/v1/ep/token", data=form, timeout=5).json()["access_token"]
        users = requests.get(url + USERS_PATH, headers={"Authorization": f"Bearer {bearer}"}, timeout=5)
        assert isinstance(users.json(), list)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert err == ""  # no request logging
