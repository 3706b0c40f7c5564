"""Shared by the normalization tests: the golden cases, the fixed options they are rendered with, and
what the property tests draw from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from forwarder.normalize import NormalizeOptions
from forwarder.records import AuditRecord, parse_record
from forwarder.timeutil import parse_iso

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden" / "ecs"
OPTIONS = NormalizeOptions(ingest_time_us=parse_iso("2026-03-01T12:00:00.000000Z"))
# The stream a case's records were fetched by: only matters for actions without a user./domain. prefix.
DOMAIN_STREAM_CASES = frozenset({"unknown_action_domain_stream"})
# The actions the audit API documents.
API_ACTIONS = (
    "user.login",
    "user.update",
    "user.update_roles",
    "domain.create",
    "domain.update",
    "domain.destroy",
)


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


def audit_record(
    action: Any, user: Any, obj: Any, changes: Any, stream: str, created_at: str = "2026-01-02T03:04:05Z"
) -> AuditRecord:
    """A record of the audits endpoint's shape holding these values: the property tests' input."""
    raw = {
        "filterable_action": action,
        "action": action,
        "user": user,
        "object": obj,
        "changes": changes,
        "created_at": created_at,
    }
    return parse_record(raw, stream)


def json_like(scalars: st.SearchStrategy, max_size: int, max_leaves: int) -> st.SearchStrategy:
    """``scalars`` nested in lists and objects of at most ``max_size`` members: arbitrary JSON-ish input."""
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=max_size)
            | st.dictionaries(st.text(max_size=8), inner, max_size=max_size)
        ),
        max_leaves=max_leaves,
    )
