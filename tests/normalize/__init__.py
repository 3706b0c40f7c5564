"""Shared by the normalization tests: the golden cases and the fixed options they are rendered with."""

from __future__ import annotations

import json
from pathlib import Path

from forwarder.normalize import NormalizeOptions
from forwarder.records import AuditRecord, parse_record
from forwarder.timeutil import parse_iso

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden" / "ecs"
OPTIONS = NormalizeOptions(ingest_time_us=parse_iso("2026-03-01T12:00:00.000000Z"))
# The stream a case's records were fetched by: only matters for actions without a user./domain. prefix.
DOMAIN_STREAM_CASES = frozenset({"unknown_action_domain_stream"})


def golden_cases() -> list[str]:
    return sorted(
        p.name[: -len(".json")] for p in GOLDEN_DIR.glob("*.json") if not p.name.endswith("-expected.json")
    )


def golden_records(case: str) -> list[AuditRecord]:
    object_type = "domain" if case in DOMAIN_STREAM_CASES else "user"
    raws = json.loads((GOLDEN_DIR / f"{case}.json").read_text(encoding="utf-8"))
    return [parse_record(raw, object_type) for raw in raws]


def expected_path(case: str) -> Path:
    return GOLDEN_DIR / f"{case}.json-expected.json"
