"""The detections on the forwarder's own health events (``forwarder/health.py``), compiled beside the
audit rules by ``tools/compile_detections.py``.

* ``detections/health/``: Sigma rules on the health log source (``product: emailauth``, ``service:
  health``), mapped by ``detections/pipelines/splunk_health.yml`` (sourcetype
  ``emailauth:audit:health``), ``elastic_health.yml`` (the audit data stream, ``event.dataset``) and
  ``sentinel_health.yml`` (``EmailAuthAudit_CL``'s ``Forwarder`` and ``ServiceId`` columns).
  They are scheduled as the audit rules are (by index time: each health event evaluated once;
  ``tests/detections/test_schedules.py`` replays late ones through them).
* ``detections/native/``: what Sigma cannot say, that an event is missing ("no health event from a
  forwarder for three of its intervals"): the rule's metadata and the search in SPL, ES|QL and KQL,
  with a schedule of their own (every 15 minutes over the last seven days, by event time).

The Splunk searches join the add-on's ``savedsearches.conf``; the Elastic rules go to
``elasticsearch/health_detection_rules.ndjson`` (Kibana's import format), the Sentinel ones to
``sentinel/health_analytics_rules.json`` (an ARM template); every rule disabled, the files committed.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Dict, List

import compile_detections
import yaml
from compile_detections import (
    ELASTIC_RISK,
    ELASTIC_SEVERITY,
    ROOT,
    Compiled,
    alert,
    compile_rules,
    elastic_rules,
    sentinel_rule,
    sentinel_rules,
)

RULES = ROOT / "detections" / "health"
NATIVE = ROOT / "detections" / "native"
ELASTIC_OUT = ROOT / "elasticsearch" / "health_detection_rules.ndjson"
SENTINEL_OUT = ROOT / "sentinel" / "health_analytics_rules.json"


# The audit rules' backends, each with the health log source's pipeline
splunk_backend = functools.partial(compile_detections.splunk_backend, "splunk_health")
elastic_backend = functools.partial(compile_detections.elastic_backend, "elastic_health")
sentinel_backend = functools.partial(compile_detections.sentinel_backend, "sentinel_health")


def native_rules() -> List[Dict[str, Any]]:
    return [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(NATIVE.glob("*.yml"))]


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Health:
    splunk: List[Compiled]
    elastic: List[Compiled]
    sentinel: List[Compiled]
    native: List[Dict[str, Any]]

    @classmethod
    def compile(cls) -> Health:
        """CompileError (one line per rule) when a rule does not compile for either backend."""
        return cls(
            compile_rules(splunk_backend, source=RULES),
            compile_rules(elastic_backend, source=RULES),
            compile_rules(sentinel_backend, source=RULES),
            native_rules(),
        )

    def savedsearches(self) -> str:
        """The add-on's ``savedsearches.conf``: the audit rules, these rules beside them, the native ones."""
        audit = compile_rules(compile_detections.splunk_backend)
        return compile_detections.savedsearches(audit + self.splunk) + self.native_splunk()

    def native_splunk(self) -> str:
        """``savedsearches.conf`` stanzas of the native rules, disabled, on their own schedule."""
        lines: List[str] = []
        for rule in sorted(self.native, key=lambda r: r["title"]):
            description = f"{_one_line(rule['description'])} (rule {rule['id']}, level {rule['level']})"
            splunk = rule["splunk"]
            lines += alert(rule["title"], description, splunk["search"], splunk["schedule"], rule["level"])
        return "\n".join(lines) + "\n" if lines else ""

    def elastic_ndjson(self) -> str:
        """The Sigma rules as ``elastic_rules`` makes them, then the native ones alike (ES|QL)."""
        rows = [json.loads(line) for line in elastic_rules(self.elastic).splitlines()]
        for rule in self.native:
            rows.append(
                {
                    "rule_id": rule["id"],
                    "name": rule["title"],
                    "description": _one_line(rule["description"]),
                    "type": "esql",
                    "language": "esql",
                    "query": _one_line(rule["esql"]["query"]),
                    "enabled": False,
                    **rule["esql"]["schedule"],
                    "risk_score": ELASTIC_RISK[rule["level"]],
                    "severity": ELASTIC_SEVERITY.get(rule["level"], rule["level"]),
                    "tags": ["EmailAuth", *rule["tags"]],
                    "threat": [],
                    "false_positives": list(rule["falsepositives"]),
                    "references": [],
                    "author": [rule["author"]],
                    "license": "Apache-2.0",
                    "max_signals": 100,
                    "version": 1,
                }
            )
        rows.sort(key=lambda row: row["rule_id"])
        return "".join(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n" for row in rows)

    def sentinel_template(self) -> str:
        """The Sigma rules as ``sentinel_rules`` makes them and the native ones (KQL), one template."""
        native = [
            sentinel_rule(
                rule["id"],
                rule["title"],
                f"{_one_line(rule['description'])} (rule {rule['id']})",
                rule["level"],
                _one_line(rule["kql"]["query"]).replace(" | ", "\n| "),
                rule["kql"]["schedule"],
            )
            for rule in self.native
        ]
        return sentinel_rules(self.sentinel, native)
