"""Compile the Sigma rules in ``detections/rules`` for the SIEMs the forwarder delivers to.

``--splunk OUT`` writes ``savedsearches.conf`` stanzas (SPL, every search disabled and scheduled,
reading the add-on's fields through ``detections/pipelines/splunk.yml``); ``--elastic OUT`` writes
Elastic Security detection rules (ES|QL) as NDJSON in Kibana's rule import format, reading
``logs-emailauth.audit-*`` through ``detections/pipelines/elastic.yml``; ``--sentinel OUT`` writes
Microsoft Sentinel scheduled analytics rules (KQL, pySigma's Kusto backend) as an ARM template, reading
the table ``EmailAuthAudit_CL`` through ``detections/pipelines/sentinel.yml``; ``--secops`` writes
Google SecOps YARA-L 2.0 rules, one file per rule, on the UDM events of the Google SecOps sink through
``detections/pipelines/secops.yml`` (the conditions by pySigma's SecOps backend; the rule around them,
and an event-count correlation, which that backend does not convert, written here). Every rule is
compiled for every backend whatever is asked, and any rule that does not compile for one of them
fails the run (exit 1, one line per failure). Rules that only feed a correlation (``generate``
unset) produce no search of their own. The pySigma packages are pinned in pyproject.toml: outputs are
reproducible.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from correlation_windows import (
    SlidingESQLBackend,
    SlidingKustoBackend,
    SlidingSplunkBackend,
    lookback_minutes,
)
from sigma.backends.secops import SecOpsBackend
from sigma.collection import SigmaCollection
from sigma.conversion.base import Backend
from sigma.conversion.state import ConversionState
from sigma.correlations import SigmaCorrelationCondition, SigmaCorrelationRule, SigmaCorrelationType
from sigma.exceptions import SigmaError
from sigma.processing.pipeline import ProcessingItem, ProcessingPipeline
from sigma.processing.transformations.base import ValueTransformation
from sigma.rule import SigmaRule
from sigma.types import SigmaBool, SigmaString, SigmaType

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "detections" / "rules"
PIPELINES = ROOT / "detections" / "pipelines"
ELASTIC_OUT = ROOT / "elasticsearch" / "detection_rules.ndjson"
SENTINEL_OUT = ROOT / "sentinel" / "analytics_rules.json"
SECOPS_OUT = ROOT / "secops" / "rules"
AnyRule = Union[SigmaRule, SigmaCorrelationRule]

# Events reach the SIEM a poll interval after they happen, and late records (a re-sweep) days after:
# searches select by when an event was indexed, not by when it happened, so each delivered event is
# evaluated by exactly one run of each search, however late it came.
# Splunk: every 15 minutes, the events indexed in the 15 minutes before the minute (_indextime), of
# any event time in the last 15 days (the first run's backfill included); alert.severity 3 .. 6.
# Correlations read further back by index time (correlation_windows.py): a burst may arrive over runs.
SPLUNK_INTERVAL_MINUTES = 15
SPLUNK_SCHEDULE = {
    "cron_schedule": f"*/{SPLUNK_INTERVAL_MINUTES} * * * *",
    "dispatch.index_earliest": f"-{SPLUNK_INTERVAL_MINUTES}m@m",
    "dispatch.index_latest": "@m",
    "dispatch.earliest_time": "-15d@d",
    "dispatch.latest_time": "+1d@d",
}
# Elastic: every 5 minutes over the last 6 by event.ingested (elasticsearch/ingest_pipeline.json sets
# it as each event arrives), falling back to @timestamp for events indexed without the pipeline.
ELASTIC_NEW_MINUTES = 6
ELASTIC_SCHEDULE = {
    "interval": "5m",
    "from": f"now-{ELASTIC_NEW_MINUTES}m",
    "to": "now",
    "timestamp_override": "event.ingested",
    "timestamp_override_fallback_disabled": False,
}
# Sentinel: every hour, the rows ingested in the last hour (ingestion_time()), of any event time in the
# last 14 days (the longest look-back a scheduled rule may have; a look-back of days takes an hourly
# rule or a slower one), as Microsoft advises for data that arrives late. Correlations read back further
# by ingestion time and count by the event's own time (correlation_windows.py): EventTime, the ECS
# @timestamp the rule's transform keeps; TimeGenerated where a row predates that column.
SENTINEL_TABLE = "EmailAuthAudit_CL"
SENTINEL_INTERVAL_MINUTES = 60
SENTINEL_SCHEDULE = {"queryFrequency": "PT1H", "queryPeriod": "P14D"}
SENTINEL_WINDOW = "| where ingestion_time() > ago(1h)"
SENTINEL_EVENT_TIME = "coalesce(EventTime, TimeGenerated)"
SENTINEL_SEVERITY = {
    "informational": "Informational",
    "low": "Low",
    "medium": "Medium",
    "high": "High",
    "critical": "High",
}
# Google SecOps: the events of this product (FORWARDER_PRODUCT's default: edit the rules if you change
# it); YARA-L's severity and priority by level.
SECOPS_PRODUCT = "EmailAuth Platform"
SECOPS_SEVERITY = {
    "informational": "Info",
    "low": "Low",
    "medium": "Medium",
    "high": "High",
    "critical": "Critical",
}
SPLUNK_SEVERITY = {"informational": 2, "low": 3, "medium": 4, "high": 5, "critical": 6}
# Elastic Security: risk score by level, as Elastic's prebuilt rules do.
ELASTIC_RISK = {"informational": 21, "low": 21, "medium": 47, "high": 73, "critical": 99}
ELASTIC_SEVERITY = {"informational": "low"}
# The ATT&CK entries the rules' tags use (name, tactics): kept here because pySigma would fetch
# them from the network. A tag missing here fails the build rather than being dropped.
TACTICS = {
    "initial-access": ("TA0001", "Initial Access"),
    "persistence": ("TA0003", "Persistence"),
    "privilege-escalation": ("TA0004", "Privilege Escalation"),
    "defense-evasion": ("TA0005", "Defense Evasion"),
    "credential-access": ("TA0006", "Credential Access"),
    "impact": ("TA0040", "Impact"),
}
TECHNIQUES = {
    "T1098": ("Account Manipulation", ("persistence", "privilege-escalation")),
    "T1098.003": ("Additional Cloud Roles", ("persistence", "privilege-escalation")),
    "T1078": ("Valid Accounts", ("initial-access", "persistence", "privilege-escalation", "defense-evasion")),
    "T1078.004": (
        "Cloud Accounts",
        ("initial-access", "persistence", "privilege-escalation", "defense-evasion"),
    ),
    "T1531": ("Account Access Removal", ("impact",)),
    "T1562": ("Impair Defenses", ("defense-evasion", "impact")),
    "T1556": ("Modify Authentication Process", ("credential-access", "defense-evasion", "persistence")),
    "T1556.006": ("Multi-Factor Authentication", ("credential-access", "defense-evasion", "persistence")),
}


class CompileError(Exception):
    """One or more rules did not compile; the message has one line per failure."""


@dataclass(frozen=True)
class Compiled:
    rule: AnyRule
    query: str


def pipeline(name: str) -> ProcessingPipeline:
    return ProcessingPipeline.from_yaml((PIPELINES / f"{name}.yml").read_text(encoding="utf-8"))


def load(source: Optional[Path] = None) -> SigmaCollection:
    """A fresh collection: pySigma's pipelines change the rule objects they process."""
    return SigmaCollection.load_ruleset([source or RULES])


def _with_references(rule: AnyRule) -> SigmaCollection:
    referenced: List[AnyRule] = []
    if isinstance(rule, SigmaCorrelationRule):
        referenced = [ref.rule for ref in rule.rules or []]
    return SigmaCollection([*referenced, rule])


def compile_rules(
    make_backend: Callable[[], Backend], output_format: Optional[str] = None, source: Optional[Path] = None
) -> List[Compiled]:
    """Every rule (of ``source``, default ``RULES``) that yields a search, converted by a fresh backend
    each (rules are converted one by one so that every failure is reported, not only the first)."""
    compiled: List[Compiled] = []
    failures: List[str] = []
    for index in range(len(load(source).rules)):
        rule = load(source).rules[index]
        try:
            queries = make_backend().convert(_with_references(rule), output_format)
        except (SigmaError, NotImplementedError) as exc:
            failures.append(f"{_source(rule)}: {type(exc).__name__}: {exc}")
            continue
        if isinstance(queries, list) and queries:
            if len(queries) != 1 or not isinstance(queries[0], str):
                failures.append(f"{_source(rule)}: expected one query, got {queries!r}")
                continue
            compiled.append(Compiled(rule, queries[0]))
    if failures:
        raise CompileError("\n".join(failures))
    return compiled


def _source(rule: AnyRule) -> str:
    path = Path(str(rule.source.path)) if rule.source else None
    if path is None:
        return rule.title
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def splunk_backend(pipeline_name: str = "splunk") -> Backend:
    return SlidingSplunkBackend(pipeline(pipeline_name), new_since=SPLUNK_SCHEDULE["dispatch.index_earliest"])


def elastic_backend(pipeline_name: str = "elastic") -> Backend:
    return SlidingESQLBackend(pipeline(pipeline_name), new_minutes=ELASTIC_NEW_MINUTES)


def _lookback(rule: AnyRule, new_minutes: int) -> Optional[int]:
    """Minutes of indexed events a correlation reads back (None for a single-event rule)."""
    if isinstance(rule, SigmaCorrelationRule) and rule.timespan is not None:
        return lookback_minutes(new_minutes, rule.timespan.seconds)
    return None


class SentinelBackend(SlidingKustoBackend):
    """pySigma's Kusto backend for the table's columns: ``Audit.roles.admin_granted`` (a path into the
    dynamic ``Audit`` column) stays unquoted, a boolean is compared as one (``tobool(...) == true``, not
    ``=~``, a string comparison), and an event-count correlation counts over a sliding window."""

    field_quote_pattern = re.compile(r"^[A-Za-z_][\w.]*$")
    timespan_mapping = {"s": "s", "m": "m", "h": "h", "d": "d"}

    def convert_condition_field_eq_val_bool(self, cond: Any, state: ConversionState) -> str:
        value: SigmaBool = cond.value
        return f"tobool({self.escape_and_quote_field(cond.field)}) == {self.bool_values[value.boolean]}"


def sentinel_backend(pipeline_name: str = "sentinel") -> Backend:
    return SentinelBackend(
        pipeline(pipeline_name),
        table=SENTINEL_TABLE,
        event_time=SENTINEL_EVENT_TIME,
        event_id="EventId",
        interval_minutes=SENTINEL_INTERVAL_MINUTES,
    )


@dataclass
class BoolAsText(ValueTransformation):
    """``true``/``false`` as text: the SecOps backend converts no boolean, and the UDM events carry
    the analyses' booleans as text (forwarder/normalize/udm.py)."""

    def apply_value(self, field: Optional[str], val: SigmaType) -> Optional[SigmaType]:
        return SigmaString("true" if val.boolean else "false") if isinstance(val, SigmaBool) else None


def secops_backend() -> Backend:
    secops = pipeline("secops")
    secops.items.append(ProcessingItem(BoolAsText(), identifier="emailauth_secops_bool_as_text"))
    return SecOpsBackend(secops)


def secops_mapping() -> Dict[str, str]:
    """Rule field -> UDM field, as ``detections/pipelines/secops.yml`` maps them."""
    mapped: Dict[str, str] = {}
    for item in pipeline("secops").items:
        mapping = getattr(item.transformation, "mapping", None)
        if isinstance(mapping, dict):
            mapped.update({key: str(v[0] if isinstance(v, list) else v) for key, v in mapping.items()})
    return mapped


def secops_field(name: str) -> str:
    """The UDM field a rule's field is read from; CompileError when the pipeline maps it nowhere."""
    try:
        return secops_mapping()[name]
    except KeyError:
        raise CompileError(f"detections/pipelines/secops.yml does not map {name}") from None


def _yaral_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _with_event(query: str) -> str:
    """The backend's UDM search condition as a YARA-L events line: each field read on event ``$e``."""
    for udm in sorted(secops_mapping().values(), key=len, reverse=True):
        query = re.sub(r"(?<![$\w.\"])" + re.escape(udm), "$e." + udm, query)
    return query


def yaral(rule: AnyRule, name: str, events: List[str], match: str = "", condition: str = "$e") -> str:
    """A YARA-L 2.0 rule: meta from the Sigma rule, ``events`` lines, an optional ``match``."""
    techniques = [
        tag.name.upper() for tag in rule.tags if tag.namespace == "attack" and tag.name.startswith("t")
    ]
    meta = {
        "author": rule.author or "emailauth-audit-forwarder",
        "description": _one_line(rule.description),
        "sigma_id": str(rule.id),
        "severity": SECOPS_SEVERITY[_level(rule)],
        "priority": SECOPS_SEVERITY[_level(rule)],
        "mitre_attack_technique": ", ".join(techniques),
        "false_positives": " ".join(_one_line(f) for f in rule.falsepositives or []),
        "reference": ", ".join(rule.references or []),
    }
    lines = [
        "// Generated by tools/compile_detections.py from detections/rules (Sigma): do not edit.",
        f"rule {name} {{",
        "  meta:",
        *(f"    {key} = {_yaral_string(value)}" for key, value in meta.items() if value),
        "",
        "  events:",
        f"    $e.metadata.product_name = {_yaral_string(SECOPS_PRODUCT)}",
        *(f"    {line}" for line in events),
    ]
    if match:
        lines += ["", "  match:", f"    {match}"]
    lines += ["", "  condition:", f"    {condition}", "}"]
    return "\n".join(lines) + "\n"


def _secops_condition(rule: SigmaRule) -> str:
    """The rule's condition as UDM search, converted alone (a correlation's base rule too)."""
    queries = secops_backend().convert(SigmaCollection([rule]), "default")
    results = queries or rule.get_conversion_result()
    if len(results) != 1 or not isinstance(results[0], str):
        raise CompileError(f"{_source(rule)}: expected one query, got {results!r}")
    return f"({results[0]})" if " OR " in results[0] else results[0]


def _secops_correlation(rule: SigmaCorrelationRule, name: str) -> str:
    condition, bases = rule.condition, [ref.rule for ref in rule.rules or []]
    if (
        rule.type != SigmaCorrelationType.EVENT_COUNT
        or not isinstance(condition, SigmaCorrelationCondition)
        or len(bases) != 1
        or not isinstance(bases[0], SigmaRule)
    ):
        raise CompileError(
            f"{_source(rule)}: only event_count correlations of one rule are written for SecOps"
        )
    base = bases[0]
    groups = [(field, "$" + re.sub(r"\W", "_", field)) for field in rule.group_by or []]
    events = [_with_event(_secops_condition(base))]
    events += [f"$e.{secops_field(field)} = {variable}" for field, variable in groups]
    match = f"{', '.join(v for _, v in groups)} over {rule.timespan.spec}" if groups else ""
    op = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<", "eq": "="}[condition.op.name.lower()]
    return yaral(rule, name, events, match, f"#e {op} {condition.count}")


def secops_rules() -> Dict[str, str]:
    """File name -> YARA-L rule, for every rule that yields an alert (a correlation's base rule has
    none of its own); CompileError with one line per rule that does not convert."""
    rules: Dict[str, str] = {}
    failures: List[str] = []
    for index in range(len(load().rules)):
        rule = load().rules[index]
        if not isinstance(rule, SigmaCorrelationRule) and rule._backreferences:
            continue  # feeds a correlation only (generate unset)
        name = Path(str(rule.source.path)).stem if rule.source else re.sub(r"\W", "_", rule.title.lower())
        try:
            if isinstance(rule, SigmaCorrelationRule):
                rules[f"{name}.yaral"] = _secops_correlation(rule, name)
            else:
                rules[f"{name}.yaral"] = yaral(rule, name, [_with_event(_secops_condition(rule))])
        except (SigmaError, NotImplementedError, CompileError) as exc:
            failures.append(f"{_source(rule)}: {type(exc).__name__}: {exc}")
    if failures:
        raise CompileError("\n".join(failures))
    return rules


def write_secops(out: Path, rules: Dict[str, str]) -> None:
    """``rules`` as files in ``out``, replacing the ``.yaral`` files there."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.yaral"):
        if stale.name not in rules:
            stale.unlink()
    for file_name, text in rules.items():
        (out / file_name).write_text(text, encoding="utf-8")


def _one_line(text: Optional[str]) -> str:
    return " ".join((text or "").split())


def _level(rule: AnyRule) -> str:
    return rule.level.name.lower() if rule.level else "medium"


def savedsearches(compiled: Sequence[Compiled]) -> str:
    """``savedsearches.conf``: one disabled, scheduled alert per rule, in rule-title order."""
    lines = [
        "# Generated by tools/compile_detections.py from detections/rules (Sigma): do not edit.",
        "# Every search ships disabled: enable the ones you want (Settings > Searches, reports, and alerts).",
    ]
    for item in sorted(compiled, key=lambda c: c.rule.title):
        rule = item.rule
        description = f"{_one_line(rule.description)} (Sigma rule {rule.id}, level {_level(rule)})"
        schedule = {**SPLUNK_SCHEDULE, **_splunk_lookback(rule)}
        lines += alert(rule.title, description, item.query, schedule, _level(rule))
    return "\n".join(lines) + "\n"


def alert(title: str, description: str, query: str, schedule: Dict[str, Any], level: str) -> List[str]:
    """The lines of one disabled, scheduled alert of ``savedsearches.conf``, after a blank line."""
    search = " ".join(line.strip() for line in query.splitlines() if line.strip())
    settings: Dict[str, Any] = {
        "description": description,
        "search": f"`emailauth_index` {search}",
        "disabled": 1,
        "enableSched": 1,
        **schedule,
        "counttype": "number of events",
        "relation": "greater than",
        "quantity": 0,
        "alert.track": 1,
        "alert.digest_mode": 1,
        "alert.severity": SPLUNK_SEVERITY[level],
    }
    head = ["", f"[{title.translate({ord(c): None for c in '[]'})}]"]
    return head + [f"{key} = {value}" for key, value in settings.items()]


def _splunk_lookback(rule: AnyRule) -> Dict[str, str]:
    minutes = _lookback(rule, SPLUNK_INTERVAL_MINUTES)
    return {} if minutes is None else {"dispatch.index_earliest": f"-{minutes}m@m"}


def _elastic_lookback(rule: AnyRule) -> Dict[str, str]:
    minutes = _lookback(rule, ELASTIC_NEW_MINUTES)
    return {} if minutes is None else {"from": f"now-{minutes}m"}


def _threat(rule: AnyRule) -> List[Dict[str, Any]]:
    tags = [tag for tag in rule.tags if tag.namespace == "attack"]
    tactics = [tag.name for tag in tags if not tag.name.startswith("t")]
    techniques = [tag.name.upper() for tag in tags if tag.name.startswith("t")]
    unknown = [t for t in tactics if t not in TACTICS] + [t for t in techniques if t not in TECHNIQUES]
    if unknown:
        raise CompileError(f"{_source(rule)}: ATT&CK tags unknown to the compiler: {unknown}")
    threat = []
    for tactic in tactics:
        tactic_id, tactic_name = TACTICS[tactic]
        entry: Dict[str, Any] = {
            "framework": "MITRE ATT&CK",
            "tactic": {
                "id": tactic_id,
                "name": tactic_name,
                "reference": f"https://attack.mitre.org/tactics/{tactic_id}/",
            },
            "technique": [],
        }
        for technique in [t for t in techniques if "." not in t and tactic in TECHNIQUES[t][1]]:
            entry["technique"].append(_technique(technique, techniques))
        for sub in [t for t in techniques if "." in t and tactic in TECHNIQUES[t][1]]:
            parent = sub.split(".")[0]
            if not any(t["id"] == parent for t in entry["technique"]):
                entry["technique"].append(_technique(parent, [sub]))
        threat.append(entry)
    return threat


def _technique(technique: str, techniques: Sequence[str]) -> Dict[str, Any]:
    name = TECHNIQUES[technique][0] if technique in TECHNIQUES else technique
    subs = [t for t in techniques if t.startswith(technique + ".")]
    entry: Dict[str, Any] = {
        "id": technique,
        "name": name,
        "reference": f"https://attack.mitre.org/techniques/{technique}/",
    }
    if subs:
        entry["subtechnique"] = [
            {
                "id": sub,
                "name": TECHNIQUES[sub][0],
                "reference": f"https://attack.mitre.org/techniques/{sub.replace('.', '/')}/",
            }
            for sub in subs
        ]
    return entry


def elastic_rules(compiled: Sequence[Compiled]) -> str:
    """Kibana's detection rule import format (Security > Rules > Import): one rule per line."""
    rows = []
    for item in sorted(compiled, key=lambda c: str(c.rule.id)):
        rule, level = item.rule, _level(item.rule)
        rows.append(
            {
                "rule_id": str(rule.id),
                "name": rule.title,
                "description": _one_line(rule.description),
                "type": "esql",
                "language": "esql",
                "query": item.query,
                "enabled": False,
                **ELASTIC_SCHEDULE,
                **_elastic_lookback(rule),
                "risk_score": ELASTIC_RISK[level],
                "severity": ELASTIC_SEVERITY.get(level, level),
                "tags": ["EmailAuth", *(f"{tag.namespace}.{tag.name}" for tag in rule.tags)],
                "threat": _threat(rule),
                "false_positives": list(rule.falsepositives or []),
                "references": list(rule.references or []),
                "author": [rule.author] if rule.author else [],
                "license": "Apache-2.0",
                "max_signals": 100,
                "version": 1,
            }
        )
    return "".join(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n" for row in rows)


def sentinel_rule(
    rule_id: str,
    title: str,
    description: str,
    level: str,
    query: str,
    schedule: Dict[str, str],
    threat: Sequence[Dict[str, Any]] = (),
) -> Dict[str, Any]:
    """One disabled scheduled analytics rule resource."""
    properties: Dict[str, Any] = {
        "displayName": title,
        "description": description,
        "severity": SENTINEL_SEVERITY[level],
        "enabled": False,
        "query": query,
        **schedule,
        "triggerOperator": "GreaterThan",
        "triggerThreshold": 0,
        "suppressionDuration": "PT5H",
        "suppressionEnabled": False,
        "tactics": [t["tactic"]["name"].replace(" ", "") for t in threat],
        "techniques": sorted({tech["id"] for t in threat for tech in t["technique"]}),
        "eventGroupingSettings": {"aggregationKind": "AlertPerResult"},
    }
    return {
        "type": "Microsoft.SecurityInsights/alertRules",
        "apiVersion": "2023-02-01",
        "scope": "[format('Microsoft.OperationalInsights/workspaces/{0}', parameters('workspace'))]",
        "name": rule_id,
        "kind": "Scheduled",
        "properties": properties,
    }


def sentinel_rules(compiled: Sequence[Compiled], native: Sequence[Dict[str, Any]] = ()) -> str:
    """An ARM template of Sentinel scheduled analytics rules, every one disabled: deploy it into the
    workspace's resource group (``workspace`` parameter), then enable the rules you want. ``native``:
    alert rule resources written otherwise (``sentinel_rule``), kept in rule-id order with the rest."""
    resources = list(native)
    for item in compiled:
        rule, level = item.rule, _level(item.rule)
        query = item.query  # a correlation: a whole query of its own
        if not isinstance(rule, SigmaCorrelationRule):
            query = "\n".join([SENTINEL_TABLE, SENTINEL_WINDOW, f"| where {item.query}"])
        description = f"{_one_line(rule.description)} (Sigma rule {rule.id})"
        resources.append(
            sentinel_rule(
                str(rule.id), rule.title, description, level, query, SENTINEL_SCHEDULE, _threat(rule)
            )
        )
    resources.sort(key=lambda resource: resource["name"])
    template = {
        "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
        "contentVersion": "1.0.0.0",
        "metadata": {
            "description": "Generated by tools/compile_detections.py from detections/rules (Sigma): do not "
            "edit. Microsoft Sentinel scheduled analytics rules over EmailAuthAudit_CL, every one disabled."
        },
        "parameters": {
            "workspace": {
                "type": "string",
                "metadata": {"description": "the Log Analytics workspace Microsoft Sentinel is enabled on"},
            }
        },
        "resources": resources,
    }
    return json.dumps(template, indent=2, ensure_ascii=False) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splunk", type=Path, metavar="OUT", help="write savedsearches.conf here")
    parser.add_argument(
        "--elastic", type=Path, metavar="OUT", nargs="?", const=ELASTIC_OUT,
        help=f"write the Kibana NDJSON here (default {ELASTIC_OUT.relative_to(ROOT)})",
    )  # fmt: skip
    parser.add_argument(
        "--sentinel", type=Path, metavar="OUT", nargs="?", const=SENTINEL_OUT,
        help=f"write the Sentinel ARM template here (default {SENTINEL_OUT.relative_to(ROOT)})",
    )  # fmt: skip
    parser.add_argument(
        "--secops", type=Path, metavar="DIR", nargs="?", const=SECOPS_OUT,
        help=f"write the YARA-L rules here (default {SECOPS_OUT.relative_to(ROOT)})",
    )  # fmt: skip
    args = parser.parse_args(argv)
    import health_detections  # the forwarder's own health: rules of their own, and native searches

    try:
        health = health_detections.Health.compile()
        splunk = health.savedsearches()
        elastic = elastic_rules(compile_rules(elastic_backend))
        sentinel = sentinel_rules(compile_rules(sentinel_backend))
        secops = secops_rules()
    except CompileError as exc:
        print(f"detections do not compile:\n{exc}", file=sys.stderr)
        return 1
    health_out = args.elastic and args.elastic.with_name(health_detections.ELASTIC_OUT.name)
    health_sentinel = args.sentinel and args.sentinel.with_name(health_detections.SENTINEL_OUT.name)
    outputs = [(args.splunk, splunk), (args.elastic, elastic), (health_out, health.elastic_ndjson())]
    outputs += [(args.sentinel, sentinel), (health_sentinel, health.sentinel_template())]
    for out, text in outputs:
        if out:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            print(out)
    if args.secops:
        write_secops(args.secops, secops)
        print(args.secops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
