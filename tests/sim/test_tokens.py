"""The simulated token endpoint and bearer check."""

from __future__ import annotations

import requests

from forwarder.sim.endpoints import USERS_PATH
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET
from tests.sim.helpers import get, token


def test_token_success_in_seconds_and_milliseconds(make_sim, clock):
    body = token(make_sim()).json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 14400
    assert body["created_at"] == int(clock.seconds)
    assert isinstance(body["access_token"], str) and len(body["access_token"]) >= 32
    assert token(make_sim(token_created_ms=True)).json()["created_at"] == int(clock.seconds * 1000)


def test_token_path_is_a_setting(make_sim):
    sim = make_sim(token_path="/v1/cp/oauth/token")
    assert token(sim, grant_type="client_credentials").status_code == 200
    default_path = requests.post(sim.base_url + "/v1/ep/token", data={"client_id": "x"}, timeout=5)
    assert default_path.status_code == 404


def test_wrong_credentials_get_401_without_echoing_the_secret(make_sim):
    sim = make_sim()
    reply = requests.post(
        sim.base_url + sim.token_path,
        data={"client_id": DEMO_CLIENT_ID, "client_secret": "wrong-secret-value"},
        timeout=5,
    )
    assert reply.status_code == 401
    body = reply.json()
    assert body["version"] == 1 and body["status"] == "error" and body["code"] == 401
    assert body["error"] == "Unauthorized" and body["error_description"]
    assert "wrong-secret-value" not in reply.text
    assert "wrong-secret-value" not in repr(sim.requests)


def test_token_request_must_be_form_encoded(make_sim):
    sim = make_sim()
    form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
    assert requests.post(sim.base_url + sim.token_path, json=form, timeout=5).status_code == 400
    assert token(sim, grant_type="password").status_code == 400


def test_missing_or_unknown_bearer_is_401(make_sim):
    sim = make_sim()
    no_header = requests.get(sim.base_url + USERS_PATH, timeout=5)
    assert no_header.status_code == 401 and no_header.json()["code"] == 401
    assert get(sim, USERS_PATH, bearer="not-a-token").status_code == 401


def test_tokens_expire_after_their_lifetime(make_sim, clock):
    sim = make_sim(token_lifetime=60)
    bearer = token(sim).json()["access_token"]
    clock.seconds += 59
    assert get(sim, USERS_PATH, bearer).status_code == 200
    clock.seconds += 1
    assert get(sim, USERS_PATH, bearer).status_code == 401
    assert get(sim, USERS_PATH).status_code == 200  # a fresh token works


def test_revoked_tokens_are_401(make_sim):
    sim = make_sim()
    bearer = token(sim).json()["access_token"]
    sim.revoke_tokens()
    assert get(sim, USERS_PATH, bearer).status_code == 401
    assert get(sim, USERS_PATH).status_code == 200
