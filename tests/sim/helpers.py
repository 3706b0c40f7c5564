"""Talking to a simulator over loopback HTTP, as a client would, for the tests of tests/sim/."""

from __future__ import annotations

import collections

import requests

from forwarder.sim.endpoints import AUDITS_PATH
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET
from forwarder.timeutil import parse_iso

NOW_US = parse_iso("2026-03-01T12:00:00Z")
DAY_US = 86_400 * 1_000_000


class FakeClock:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self) -> float:
        return self.seconds


def token(sim, **extra):
    form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET, **extra}
    return requests.post(sim.base_url + sim.token_path, data=form, timeout=5)


def get(sim, path, bearer=None, **params):
    bearer = bearer or token(sim).json()["access_token"]
    return requests.get(
        sim.base_url + path, params=params, headers={"Authorization": f"Bearer {bearer}"}, timeout=5
    )


def audits(sim, bearer=None, **params):
    return get(sim, AUDITS_PATH, bearer, **params)


def busiest_user(org):
    counts = collections.Counter(r["user"].lower() for r in org.all_records())
    return counts.most_common(1)[0][0]


def fetch_all(sim, name, object_type="user", limit=50, **params):
    bearer = token(sim).json()["access_token"]
    pages, offset = [], 0
    while True:
        body = audits(sim, bearer, object_type=object_type, name=name, limit=limit, offset=offset, **params)
        items = body.json()["audits"]
        pages.append(items)
        offset += len(items)
        if len(items) < limit:
            return pages
