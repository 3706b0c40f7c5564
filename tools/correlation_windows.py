"""Event-count correlations over sliding time windows, for Splunk, ES|QL and KQL, and their look-back.

pySigma's backends count an ``event_count`` correlation per fixed bin (``bin _time``, ``date_trunc``):
five changes in four minutes across a bin edge fall in two bins and nothing alerts. These backends
count over windows that follow the events instead:

* Splunk: ``streamstats time_window=<timespan>`` per group over the events in time order, so each
  event carries the count of its group's events in the timespan up to it (a sliding window).
* ES|QL has no window functions: every event is counted in each window of the timespan that starts
  on a multiple of ``HOP`` before it (``MV_EXPAND`` over the offsets), so events within the timespan
  less one hop always share a window (hopping windows, a minute apart).
* KQL (Microsoft Sentinel): the run's events joined with themselves per group, each counting those
  of its group in the timespan up to it by event time (a sliding window, as ``streamstats``). Event
  time, not ``TimeGenerated``: Log Analytics replaces a ``TimeGenerated`` more than two days old
  with the time the row arrived, so a late re-sweep would stack up at its arrival.

The searches select by ingest time (``compile_detections.py``): a run sees what was indexed since the
one before, and a burst delivered over two runs would be split between them. A correlation therefore
reads back ``run interval + timespan + FORWARDER_LAG`` of indexed events and reports a window only
when one of its events is new to this run, so a burst alerts once, when its last event arrives (a
burst that goes on alerts again as it grows).
"""

from __future__ import annotations

from typing import Any, List

from sigma.backends.elasticsearch import ESQLBackend
from sigma.backends.kusto import KustoBackend
from sigma.backends.splunk import SplunkBackend
from sigma.correlations import SigmaCorrelationCondition, SigmaCorrelationRule
from sigma.exceptions import SigmaConversionError

# How late an event of a burst may reach the SIEM after its first: the scheduler's default revisit
# bound for quiet user streams (6 intervals of 5 minutes; hot streams are polled every run) plus a run.
FORWARDER_LAG_MINUTES = 35
HOP_SECONDS = 60  # ES|QL windows start a minute apart


def lookback_minutes(interval_minutes: int, timespan_seconds: int) -> int:
    """The indexed events a correlation run reads: its own interval, the timespan, the lag."""
    return interval_minutes + -(-timespan_seconds // 60) + FORWARDER_LAG_MINUTES


def _group_by(rule: SigmaCorrelationRule) -> List[str]:
    return list(rule.group_by or [])  # never empty once _condition has passed


def _condition(rule: SigmaCorrelationRule) -> SigmaCorrelationCondition:
    cond = rule.condition
    if not isinstance(cond, SigmaCorrelationCondition) or not rule.group_by or rule.timespan is None:
        raise SigmaConversionError(
            rule, rule.source, "a sliding event count needs a count, a group-by and a timespan"
        )
    return cond


class SlidingSplunkBackend(SplunkBackend):
    """Splunk, with ``event_count`` correlations over a sliding window; ``new_since`` is the relative
    time the run's own index window starts at (``dispatch.index_earliest`` of the single-event rules)."""

    def __init__(self, *args: Any, new_since: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.new_since = new_since

    def convert_correlation_event_count_rule(
        self, rule: SigmaCorrelationRule, output_format: str | None = None, method: str = "stats"
    ) -> List[str]:
        cond = _condition(rule)
        group = " ".join(_group_by(rule))
        span = self.convert_timespan(rule.timespan, method)
        test = f"{self.correlation_condition_mapping[cond.op]} {cond.count}"
        new = f'relative_time(now(), "{self.new_since}")'
        counts = "count as event_count, max(indexed_at) as last_indexed"
        lines = [
            self.convert_correlation_search(rule),
            "| eval indexed_at=_indextime",
            "| sort 0 _time",
            f"| streamstats time_window={span} {counts} by {group}",
            f"| where event_count {test} AND last_indexed >= {new}",
            f"| stats max(event_count) as event_count by {group}",
        ]
        return ["\n".join(lines)]


class SlidingESQLBackend(ESQLBackend):
    """ES|QL, with ``event_count`` correlations over hopping windows; ``new_minutes`` is how far back a
    run's new events reach (the single-event rules' look-back), by ``event.ingested``."""

    def __init__(self, *args: Any, new_minutes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.new_minutes = new_minutes

    def convert_correlation_event_count_rule(
        self, rule: SigmaCorrelationRule, output_format: str | None = None, method: str = "stats"
    ) -> List[str]:
        cond = _condition(rule)
        if rule.timespan.seconds % HOP_SECONDS:
            raise SigmaConversionError(
                rule, rule.source, f"the timespan must be whole minutes: {rule.timespan}"
            )
        span = rule.timespan.seconds * 1000
        hops = ", ".join(str(start) for start in range(0, span, HOP_SECONDS * 1000))
        group = ", ".join(_group_by(rule))
        test = f"{self.correlation_condition_mapping[cond.op]} {cond.count}"
        counts = "event_count = count(), last_ingested = max(sigma_ingested)"
        lines = [
            self.convert_correlation_search(rule),
            "| eval sigma_ms = to_long(@timestamp), sigma_ingested = coalesce(event.ingested, @timestamp),"
            f" sigma_hop = [{hops}]",
            "| mv_expand sigma_hop",
            f"| eval sigma_window = (sigma_ms - sigma_hop) / {span} * {span} + sigma_hop",
            f"| stats {counts} by sigma_window, {group}",
            f"| where event_count {test} and last_ingested >= now() - {self.new_minutes} minutes",
            f"| stats event_count = max(event_count) by {group}",
        ]
        return ["\n".join(lines)]


class SlidingKustoBackend(KustoBackend):
    """KQL, with ``event_count`` correlations over a sliding window: a whole query over ``table``, rows
    selected by ``ingestion_time()`` (the look-back), counted by ``event_time`` (an expression), rows
    sent twice (the same ``event_id``) counted once, reported when new in the last ``interval_minutes``."""

    correlation_methods = {"summarize": "Correlation with summarize"}
    default_correlation_method = "summarize"
    correlation_search_single_rule_expression = "{query}"
    correlation_search_multi_rule_expression = "{queries}"
    correlation_search_multi_rule_query_expression = "({query})"
    correlation_search_multi_rule_query_expression_joiner = " or "

    def __init__(
        self, *args: Any, table: str, event_time: str, event_id: str, interval_minutes: int, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.table, self.event_time, self.event_id = table, event_time, event_id
        self.interval_minutes = interval_minutes

    def convert_correlation_event_count_rule(
        self, rule: SigmaCorrelationRule, output_format: str | None = None, method: str = "summarize"
    ) -> List[str]:
        cond = _condition(rule)
        group = ", ".join(_group_by(rule))
        span = self.convert_timespan(rule.timespan, output_format, method)
        lookback = lookback_minutes(self.interval_minutes, rule.timespan.seconds)
        test = f"{self.correlation_condition_mapping[cond.op]} {cond.count}"
        in_window = "sigma_in_time = sigma_time, sigma_in_ingested = sigma_ingested"
        lines = [
            f"let sigma_events = {self.table}",
            f"| where ingestion_time() > ago({lookback}m)",
            f"| where {self.convert_correlation_search(rule)}",
            f"| extend sigma_time = {self.event_time}, sigma_ingested = ingestion_time()",
            f"| summarize arg_min(sigma_ingested, sigma_time, {group}) by {self.event_id};",
            "sigma_events",
            f"| join kind=inner (sigma_events | project {group}, {in_window}) on {group}",
            f"| where sigma_in_time > sigma_time - {span} and sigma_in_time <= sigma_time",
            "| summarize event_count = count(), last_ingested = max(sigma_in_ingested)"
            f" by {self.event_id}, {group}",
            f"| where event_count {test} and last_ingested > ago({self.interval_minutes}m)",
            f"| summarize event_count = max(event_count) by {group}",
        ]
        return ["\n".join(lines)]
