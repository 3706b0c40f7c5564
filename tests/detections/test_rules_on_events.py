"""Every shipped rule, compiled by pySigma's DuckDB backend, runs on the ECS NDJSON a forwarder run
wrote from the scenario organization (forwarder/sim/scenarios.py): it must match exactly the seeded
positives and none of the lookalikes. The per-rule table is printed (pytest -s) for the README."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, List

import pytest
from compile_detections import Compiled, compile_rules
from sigma_backend_duckdb import DuckDBBackend

from forwarder.app import run_once
from forwarder.sim.scenarios import BURSTS, ROLE_BURST, burst_actors, seeded_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import canonical_id, settings_for
from tests.fakes import NO_WAITS

from .duckdb_engine import BinnedDuckDB, HoppingDuckDB, JoinedDuckDB, SlidingDuckDB, load, matching

ORG, SEEDED = seeded_org(31, now_us())


def stem(item: Compiled) -> str:
    assert item.rule.source is not None
    return Path(str(item.rule.source.path)).stem


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("scenarios")
    path = tmp / "events.ndjson"
    domains = ",".join(d.name for d in ORG.domains if d.destroyed_us is None)
    with Simulator(ORG) as sim:
        report = run_once(
            settings_for(sim.base_url, path.as_uri(), str(tmp / "state"), FORWARDER_DOMAINS=domains),
            pace=NO_WAITS,
        )
    assert report.ok, report.to_dict()
    return path


@pytest.fixture(scope="module")
def con(events):
    return load(events)


@pytest.fixture(scope="module")
def rules() -> Dict[str, Compiled]:
    return {stem(item): item for item in compile_rules(SlidingDuckDB)}


def expected_ids(rule: str) -> List[str]:
    return sorted(canonical_id(s.record) for s in SEEDED if rule in s.rules)


def lookalike_ids(rule: str) -> List[str]:
    return sorted(canonical_id(s.record) for s in SEEDED if rule not in s.rules)


def test_the_run_shipped_every_scenario(events):
    shipped = {json.loads(line)["event"]["id"] for line in events.read_text().splitlines()}
    assert {canonical_id(s.record) for s in SEEDED} <= shipped


def test_every_rule_is_exercised_by_a_scenario(rules):
    seeded_rules = {rule for s in SEEDED for rule in s.rules} | set(BURSTS)
    assert set(rules) == seeded_rules


def test_each_rule_matches_exactly_its_seeded_positives(con, rules):
    table = ["| rule | level | positives found | lookalikes matched |", "|---|---|---|---|"]
    problems = []
    for name, item in sorted(rules.items()):
        level = item.rule.level.name.lower() if item.rule.level else "-"
        if name in BURSTS:
            found, want = matching(con, item.query, "user.id"), burst_actors(ORG, name)
            wrong = sorted(set(found) - set(want))
        else:
            found, want = matching(con, item.query, "event.id"), expected_ids(name)
            wrong = sorted(set(found) & set(lookalike_ids(name)))
            wrong += sorted(set(found) - set(want) - set(wrong))  # noise from the generated trail
        hits = len(set(found) & set(want))
        table.append(f"| {name} | {level} | {hits}/{len(want)} | {len(wrong)} |")
        if found != want:
            problems.append(f"{name}: found {found}, want {want}")
    print("\n".join(table))
    assert problems == []


def correlations(backend) -> Dict[str, Compiled]:
    return {stem(item): item for item in compile_rules(backend) if stem(item) in BURSTS}


@pytest.mark.parametrize("burst", BURSTS)
def test_the_bursts_slide_over_bin_edges(con, burst):
    """Counting over all time (the packaged backend) also flags actor 2's six changes an hour apart;
    fixed bins (pySigma's Splunk, ES|QL and Kusto queries) miss the bursts across a bin's edge. Windows
    that slide (Splunk's streamstats, the KQL self-join) or hop every minute (the ES|QL query) find
    exactly the bursts."""
    want = burst_actors(ORG, burst)
    binned = matching(con, correlations(BinnedDuckDB)[burst].query, "user.id")
    assert binned != want and set(binned) < set(want)
    assert matching(con, correlations(SlidingDuckDB)[burst].query, "user.id") == want
    assert matching(con, correlations(HoppingDuckDB)[burst].query, "user.id") == want
    assert matching(con, correlations(JoinedDuckDB)[burst].query, "user.id") == want
    if burst == ROLE_BURST:
        packaged = correlations(DuckDBBackend)[burst]
        assert ORG.users[2].email in matching(con, packaged.query, "user.id")


def kv_mode_json_names(value, prefix: str = "") -> set:
    """The field names Splunk's KV_MODE = json extracts from one event: objects joined by dots, a
    JSON array's values under `<name>{}`."""
    if isinstance(value, dict):
        return set().union(*(kv_mode_json_names(v, f"{prefix}{k}.") for k, v in value.items())) or set()
    if isinstance(value, list):
        inner = [kv_mode_json_names(v, prefix[:-1] + "{}.") for v in value]
        return set().union(*inner) if inner else {prefix[:-1] + "{}"}
    return {prefix[:-1]}


def test_splunk_tables_name_fields_as_the_add_on_extracts_them(events):
    """Every column of every alert table is a field the add-on's props.conf gives (KV_MODE = json
    on the events the scenarios produce, or one of its aliases and evals)."""
    from compile_detections import splunk_backend

    props = (Path(__file__).resolve().parents[2] / "splunk_app/package/default/props.conf").read_text()
    stanza = props.split("[emailauth:audit]")[1].split("\n[")[0]
    assert "KV_MODE = json" in stanza
    extracted = set().union(
        *(kv_mode_json_names(json.loads(line)) for line in events.read_text().splitlines())
    )
    aliases = set(re.findall(r" AS (\S+)", stanza)) | set(re.findall(r"(?m)^EVAL-(\S+) =", stanza))
    for item in compile_rules(splunk_backend):
        for table in re.findall(r"\| table (\S+)", item.query):
            missing = [f for f in table.split(",") if f not in extracted | aliases]
            assert not missing, f"{stem(item)}: {missing}"
