"""Several organizations through the command as users run it: `run`, `run --tenant`, `state show
--tenant`, `check --tenant`, and one tenant's revoked credentials failing only that tenant."""

from __future__ import annotations

import json

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import org_secret, organizations
from tests.e2e.helpers import HEC_TOKEN, expected_for_users, ids_by_index, quiet_users
from tests.test_cli import cli


@pytest.fixture(scope="module")
def orgs():
    return [generate_org(100 + i) for i in range(3)]


@pytest.fixture
def sims(orgs):
    with organizations(orgs) as simulators:
        yield simulators


def setup(tmp_path, sims, orgs, hec, secrets=None):
    tenants = [
        {
            "name": f"org{i}",
            "api_url": sim.base_url,
            "client_id": f"org-{i}",
            "client_secret": (secrets or {}).get(i, org_secret(i)),
            "users": quiet_users(org),
            "object_types": ["user"],
            "hec_index": f"idx{i}",
        }
        for i, (sim, org) in enumerate(zip(sims, orgs))
    ]
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"tenants": tenants}))
    env = {
        "FORWARDER_TENANTS": str(path),
        "FORWARDER_SINK": hec.url,
        "FORWARDER_SINK_TOKEN": HEC_TOKEN,
        "FORWARDER_STATE": str(tmp_path / "state"),
        "FORWARDER_QUARANTINE": str(tmp_path / "quarantine"),
        "FORWARDER_INITIAL_LOOKBACK": "13mo",
    }
    return tenants, env


def test_every_tenant_into_its_own_index_once_and_one_tenant_alone(tmp_path, sims, orgs, hec):
    tenants, env = setup(tmp_path, sims, orgs, hec)
    only = cli("run", "--tenant", "org1", env=env)
    assert only.returncode == 0, only.stderr
    assert set(ids_by_index(hec.events())) == {"idx1"} and not sims[0].requests and not sims[2].requests

    result = cli("run", "--report", env=env)
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stderr.splitlines() if line.startswith('{"tenant"')]
    assert sorted(r["tenant"] for r in reports) == ["org0", "org1", "org2"]
    delivered = ids_by_index(hec.events())
    for i, (tenant, org) in enumerate(zip(tenants, orgs)):
        assert sorted(delivered[f"idx{i}"]) == expected_for_users(org, tenant["users"])  # each once

    shown = cli("state", "show", "--tenant", "org2", env=env)
    [doc] = [json.loads(line) for line in shown.stdout.splitlines()]
    assert doc["tenant"] == "org2" and doc["location"].endswith("tenant/org2")
    assert sorted(s["stream"] for s in doc["streams"]) == sorted(
        f"user/{u.lower()}" for u in tenants[2]["users"]
    )
    everyone = [json.loads(line)["tenant"] for line in cli("state", "show", env=env).stdout.splitlines()]
    assert everyone == ["org0", "org1", "org2"]


def test_revoked_credentials_fail_that_tenant_alone(tmp_path, sims, orgs, hec):
    _, env = setup(tmp_path, sims, orgs, hec, secrets={1: "revoked-secret"})
    result = cli("run", "--report", env=env)
    assert result.returncode == 1
    reports = {
        r["tenant"]: r
        for r in (json.loads(line) for line in result.stderr.splitlines() if line.startswith('{"tenant"'))
    }
    assert not reports["org1"]["ok"] and reports["org0"]["ok"] and reports["org2"]["ok"]
    assert set(ids_by_index(hec.events())) == {"idx0", "idx2"}
    assert "revoked-secret" not in result.stdout + result.stderr

    checked = cli("check", "--tenant", "org1", env=env)
    assert checked.returncode == 1 and checked.stdout.startswith("tenant org1:") and "FAIL" in checked.stdout
    assert cli("check", "--tenant", "org0", env=env).returncode == 0


def test_tenant_problems_fail_before_any_network_call(tmp_path, sims, orgs, hec):
    tenants, env = setup(tmp_path, sims, orgs, hec)
    tenants[1]["users"] = ["nobody"]
    tenants[2]["api_url"] = "http://api.example.com"
    (tmp_path / "tenants.json").write_text(json.dumps({"tenants": tenants}))
    result = cli("run", env=env)
    assert result.returncode == 2
    assert "tenant 'org1': users: 'nobody' is not an email address" in result.stderr
    assert "tenant 'org2': api_url:" in result.stderr
    assert not any(sim.requests for sim in sims)
    assert (
        "no tenant 'org9'" not in cli("run", "--tenant", "org9", env=env).stderr
    )  # every tenant checked first
    setup(tmp_path, sims, orgs, hec)
    unknown = cli("run", "--tenant", "org9", env=env)
    assert unknown.returncode == 2 and "no tenant 'org9'" in unknown.stderr
