"""Several organizations through the command as users run it: `run`, `run --tenant`, `state show
--tenant`, `check --tenant`, and one tenant's revoked credentials failing only that tenant."""

from __future__ import annotations

import json
import re

import pytest

from forwarder.events import Event, Rejection
from forwarder.quarantine import LocalQuarantine
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import org_secret, organizations
from tests.console.terminal import environment, in_terminal
from tests.console.test_run_in_terminal import TOTALS_HEAD
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
    logged = [json.loads(line) for line in result.stderr.splitlines()]
    failed = [x for x in logged if x.get("message") in ("run failed", "stream failed")]
    # the token is refused before any stream starts: that tenant's run fails once, logged as its own
    assert [(x["message"], x["tenant"]) for x in failed] == [("run failed", "org1")]

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


def refused(n: int) -> Rejection:
    eid = f"{n:064x}"
    body = json.dumps({"@timestamp": "2026-01-02T03:04:05.000Z", "event": {"id": eid}}).encode()
    return Rejection(Event(eid, 1_767_323_045_000_000, body), f"refused {n}")


def test_quarantine_list_and_replay_per_tenant_each_into_its_own_sink(tmp_path, sims, orgs, hec):
    _, env = setup(tmp_path, sims, orgs, hec)
    for i in range(3):  # what each tenant's sink refused: quarantine/tenant/org<i>
        LocalQuarantine(str(tmp_path / "quarantine" / "tenant" / f"org{i}")).keep("user/a@x", [refused(i)])

    listed = [json.loads(line) for line in cli("quarantine", "list", env=env).stdout.splitlines()]
    assert [(e["tenant"], e["reason"]) for e in listed] == [(f"org{i}", f"refused {i}") for i in range(3)]
    one = cli("quarantine", "list", "--tenant", "org2", env=env)
    assert [json.loads(line)["tenant"] for line in one.stdout.splitlines()] == ["org2"]

    replayed = cli("quarantine", "replay", "--tenant", "org1", env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout) == {
        "tenant": "org1",
        "replayed": 1,
        "still_quarantined": [],
        "error": None,
    }
    assert ids_by_index(hec.events()) == {"idx1": [f"{1:064x}"]}  # org1's index only
    assert not any(sim.requests for sim in sims)  # a replay never calls the platform

    everyone = cli("quarantine", "replay", env=env)
    assert everyone.returncode == 0, everyone.stderr
    assert [(o["tenant"], o["replayed"]) for o in map(json.loads, everyone.stdout.splitlines())] == [
        ("org0", 1),
        ("org1", 0),
        ("org2", 1),
    ]
    assert ids_by_index(hec.events()) == {f"idx{i}": [f"{i:064x}"] for i in range(3)}
    assert cli("quarantine", "list", env=env).stdout == ""


def test_a_tenant_whose_quarantine_cannot_be_read_fails_its_replay_alone(tmp_path, sims, orgs, hec):
    _, env = setup(tmp_path, sims, orgs, hec)
    for i in (0, 2):
        LocalQuarantine(str(tmp_path / "quarantine" / "tenant" / f"org{i}")).keep("user/a@x", [refused(i)])
    (tmp_path / "quarantine" / "tenant" / "org1" / "quarantine.ndjson").mkdir(parents=True)  # unreadable
    result = cli("quarantine", "replay", env=env)
    outcomes = {o["tenant"]: o for o in map(json.loads, result.stdout.splitlines())}
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert outcomes["org1"]["error"] and outcomes["org1"]["replayed"] == 0
    assert [outcomes[t]["replayed"] for t in ("org0", "org2")] == [1, 1]
    assert ids_by_index(hec.events()) == {"idx0": [f"{0:064x}"], "idx2": [f"{2:064x}"]}


def test_text_run_prints_each_tenants_summary_and_their_total(tmp_path, sims, orgs, hec):
    _, env = setup(tmp_path, sims, orgs, hec, secrets={1: "revoked-secret"})
    result = cli("run", "--report", env={**env, "FORWARDER_LOG_FORMAT": "text"})
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    reports = {r["tenant"]: r for r in (json.loads(x) for x in lines if x.startswith('{"tenant"'))}
    heads = [x for x in lines if x.startswith("tenant org")]
    assert [h.split(":")[0] for h in heads] == ["tenant org0", "tenant org1", "tenant org2"]
    assert "run finished" in heads[0] and "run failed" in heads[1] and "run finished" in heads[2]
    for name, head in zip(("org0", "org2"), (heads[0], heads[2])):  # its own numbers under its head
        row = lines[lines.index(head) + 2].split()
        totals = reports[name]["totals"]
        assert [int(v.replace(",", "")) for v in row] == [
            totals[k] for k in ("streams", "fetched", "new", "shipped", "quarantined", "failed_streams")
        ]
    assert any("error: " in x and "revoked-secret" not in x for x in lines)

    total_head = next(i for i, x in enumerate(lines) if x.startswith("3 tenants in "))
    assert "2 finished" in lines[total_head] and "1 failed (org1)" in lines[total_head]
    assert lines[total_head + 1].split() == ["tenant", *TOTALS_HEAD]
    rows = {
        x.split()[0]: [int(v.replace(",", "")) for v in x.split()[1:]]
        for x in lines[total_head + 2 : total_head + 6]
    }
    assert list(rows) == ["org0", "org1", "org2", "total"]
    assert rows["total"] == [sum(r[i] for r in list(rows.values())[:3]) for i in range(6)]
    assert rows["total"][3] == sum(r["totals"]["shipped"] for r in reports.values()) > 0


def test_json_run_names_the_tenant_on_each_of_its_log_lines(tmp_path, sims, orgs, hec):
    _, env = setup(tmp_path, sims, orgs, hec)
    result = cli("run", env={**env, "FORWARDER_LOG_FORMAT": "json"})
    assert result.returncode == 0, result.stderr
    logged = [json.loads(line) for line in result.stderr.splitlines()]
    finished = [x for x in logged if x["message"] == "run finished"]
    assert sorted(x["tenant"] for x in finished) == ["org0", "org1", "org2"]
    assert all(x.get("tenant") for x in logged if x["message"] == "stream finished")


def test_at_a_terminal_tenants_share_one_live_line_then_their_summaries(tmp_path, sims, orgs, hec):
    _, env = setup(tmp_path, sims, orgs, hec)
    for sim in sims:
        sim.latency_seconds = 0.03  # each request takes a while, so the line is drawn during the run
    screen = in_terminal("run", env=environment(env))
    assert screen.code == 0, screen.plain
    frames = [f for f in screen.frames() if f.startswith("tenants ")]
    assert frames and all(re.match(r"^tenants [0-3]/3 started", f) for f in frames), screen.frames()
    lines = screen.lines()
    assert [x.split(":")[0] for x in lines if x.startswith("tenant org")] == [
        "tenant org0",
        "tenant org1",
        "tenant org2",
    ]
    head = next(i for i, x in enumerate(lines) if x.startswith("3 tenants in "))
    assert "3 finished" in lines[head] and lines[head + 5].split()[0] == "total"
