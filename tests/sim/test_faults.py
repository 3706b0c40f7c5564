"""Injected faults: error statuses, malformed bodies."""

from __future__ import annotations

import pytest

from tests.sim.helpers import audits, busiest_user, token


def test_fail_next_with_retry_after_then_recovers(make_sim, org):
    sim = make_sim()
    bearer = token(sim).json()["access_token"]
    sim.fail_next(2, 503, retry_after=1.5)
    assert token(sim).status_code == 200  # other paths are untouched
    for _ in range(2):
        reply = audits(sim, bearer, object_type="user", name=busiest_user(org))
        assert reply.status_code == 503 and reply.headers["Retry-After"] == "1.5"
        assert reply.json()["code"] == 503
    assert audits(sim, bearer, object_type="user", name=busiest_user(org)).status_code == 200
    sim.fail_next(1, 429)
    reply = audits(sim, bearer, object_type="user", name=busiest_user(org))
    assert reply.status_code == 429 and "Retry-After" not in reply.headers


def test_fail_next_on_the_token_path(make_sim):
    sim = make_sim()
    sim.fail_next(1, 500, path_prefix=sim.token_path)
    assert token(sim).status_code == 500
    assert token(sim).status_code == 200


@pytest.mark.parametrize("style", ["envelope", "bare"])
def test_malformed_bodies(make_sim, org, style):
    sim = make_sim(style=style)
    bearer = token(sim).json()["access_token"]
    name = busiest_user(org)
    for kind in ("html", "truncated", "wrong-shape", "not-list-items"):
        sim.malform_next(1, kind)
    html = audits(sim, bearer, object_type="user", name=name)
    assert html.status_code == 200 and html.headers["Content-Type"].startswith("text/html")
    truncated = audits(sim, bearer, object_type="user", name=name)
    assert truncated.status_code == 200
    with pytest.raises(ValueError):
        truncated.json()
    wrong = audits(sim, bearer, object_type="user", name=name).json()
    assert isinstance(wrong, dict) and not any(isinstance(v, list) for v in wrong.values())
    strings = audits(sim, bearer, object_type="user", name=name).json()
    items = strings["audits"] if style == "envelope" else strings
    assert items and all(isinstance(i, str) for i in items)
    assert audits(sim, bearer, object_type="user", name=name).json()  # back to normal
    with pytest.raises(ValueError):
        sim.malform_next(1, "gibberish")
