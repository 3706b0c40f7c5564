"""The shipped burst correlations (tools/correlation_windows.py) replayed through their schedules.

Bursts (the threshold's number of events by one actor within the timespan, less the ES|QL hop) are
delivered with a lag of up to ``FORWARDER_LAG_MINUTES`` each, so a burst may reach the SIEM over
several runs. A model of each search, its parameters read from what the build ships (the saved
search's schedule, time window, threshold and "new in this run" bound; the ES|QL rule's hops, span,
look-back and bound; the Sentinel rule's frequency, period, look-back, span, threshold and bound),
must alert on every burst: Splunk and Sentinel exactly once, Elastic at least once (its runs
overlap). A burst that fixed bins split, or that arrives over two runs, alerts all the same."""

from __future__ import annotations

import functools
import re
from typing import Dict, List, Sequence, Tuple

from correlation_windows import FORWARDER_LAG_MINUTES, HOP_SECONDS, lookback_minutes
from hypothesis import given, settings
from hypothesis import strategies as st

from .test_schedules import (
    DAY,
    HOUR,
    MINUTE,
    elastic_rules,
    iso_seconds,
    sentinel_rules,
    sentinel_runs,
    splunk_conf,
    splunk_runs,
    splunk_time,
    time_generated,
)

Event = Tuple[str, int, int]  # actor, happened, indexed (seconds)


def _number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return int(found.group(1))


@functools.cache
def splunk_correlations() -> List[Dict[str, str]]:
    conf = splunk_conf()
    return [dict(conf[name]) for name in conf.sections() if "| streamstats " in conf[name]["search"]]


@functools.cache
def elastic_correlations() -> List[dict]:
    return [rule for rule in elastic_rules() if "mv_expand sigma_hop" in rule["query"]]


def splunk_alerts(stanza: Dict[str, str], events: Sequence[Event]) -> List[Tuple[int, str]]:
    """(run, actor) of every alert the search raises over the runs that see ``events``."""
    search = stanza["search"]
    span = _number(r"time_window=(\d+)m", search) * MINUTE
    threshold = _number(r"where event_count >= (\d+)", search)
    new_since = re.search(r'relative_time\(now\(\), "([^"]+)"\)', search)
    assert new_since
    first, last = min(e[2] for e in events), max(e[2] for e in events)
    alerts = []
    for run in splunk_runs(stanza, first, last + 1):  # type: ignore[arg-type]
        index_from = splunk_time(stanza["dispatch.index_earliest"], run)
        seen = sorted((h, a, i) for a, h, i in events if index_from <= i < run and i <= run)
        fresh = splunk_time(new_since.group(1), run)
        for happened, actor, _ in seen:  # streamstats over the events in time order, per actor
            window = [i for h, a, i in seen if a == actor and happened - span < h <= happened]
            if len(window) >= threshold and max(window) >= fresh:
                alerts.append((run, actor))
    return sorted(set(alerts))


def elastic_alerts(rule: dict, events: Sequence[Event], jitter: int) -> List[Tuple[int, str]]:
    query = rule["query"]
    hops = [int(h) // 1000 for h in re.search(r"sigma_hop = \[([\d, ]+)\]", query).group(1).split(", ")]  # type: ignore[union-attr]
    span = _number(r"/ (\d+) \*", query) // 1000
    threshold = _number(r"where event_count >= (\d+)", query)
    new = _number(r"now\(\) - (\d+) minutes", query) * MINUTE
    interval = int(rule["interval"][:-1]) * MINUTE
    lookback = _number(r"now-(\d+)m", rule["from"]) * MINUTE
    first, last = min(e[2] for e in events), max(e[2] for e in events)
    alerts = []
    for start in range(first - first % interval, last + 2 * interval, interval):
        run = start + jitter
        seen = [(a, h, i) for a, h, i in events if run - lookback <= i <= run]
        windows: Dict[Tuple[int, str], List[int]] = {}
        for actor, happened, ingested in seen:
            for hop in hops:
                windows.setdefault(((happened - hop) // span * span + hop, actor), []).append(ingested)
        for (_, actor), ingested in windows.items():
            if len(ingested) >= threshold and max(ingested) >= run - new:
                alerts.append((start, actor))
    return sorted(set(alerts))


@functools.cache
def sentinel_correlations() -> List[dict]:
    return [props for props in sentinel_rules() if props["query"].startswith("let sigma_events")]


def sentinel_alerts(props: dict, events: Sequence[Event], phase: int) -> List[Tuple[int, str]]:
    """(run, actor) of every alert: each run reads the rows ingested in its look-back (and stamped
    within its period), counts each row's group in the span up to it by event time (EventTime, the
    record's own time), and reports the groups whose count reached the threshold with a new row."""
    query = props["query"]
    assert "sigma_time = coalesce(EventTime, TimeGenerated)" in query  # windows by the record's time
    lookback = _number(r"ingestion_time\(\) > ago\((\d+)m\)", query) * MINUTE
    span = _number(r"sigma_in_time > sigma_time - (\d+)m", query) * MINUTE
    threshold = _number(r"where event_count >= (\d+)", query)
    new = _number(r"last_ingested > ago\((\d+)m\)", query) * MINUTE
    period = iso_seconds(props["queryPeriod"])
    first, last = min(e[2] for e in events), max(e[2] for e in events)
    alerts = []
    for run in sentinel_runs(props, first, last, phase):
        seen = [
            (a, h, i)
            for a, h, i in events
            if run - lookback < i <= run and run - period <= time_generated(h, i) <= run
        ]
        for actor, happened, _ in seen:
            window = [i for a, h, i in seen if a == actor and happened - span < h <= happened]
            if len(window) >= threshold and max(window) > run - new:
                alerts.append((run, actor))
    return sorted(set(alerts))


def bursts(threshold: int, span: int) -> st.SearchStrategy[List[Event]]:
    """Up to four actors' bursts, far apart: ``threshold`` events within ``span`` less a hop, each
    indexed up to the forwarder's lag after it happened."""
    one = st.tuples(
        st.integers(10 * DAY, 10 * DAY + 2 * DAY),
        st.lists(st.integers(0, span - HOP_SECONDS - 1), min_size=threshold - 1, max_size=threshold - 1),
        st.lists(st.integers(1, FORWARDER_LAG_MINUTES * MINUTE), min_size=threshold, max_size=threshold),
    )

    def events(specs: List[Tuple[int, List[int], List[int]]]) -> List[Event]:
        out = []
        for n, (start, offsets, lags) in enumerate(specs):
            begin = start + n * 3 * DAY  # actors' bursts days apart
            for happened, lag in zip([begin, *(begin + o for o in offsets)], lags):
                out.append((f"actor{n}", happened, happened + lag))
        return out

    return st.lists(one, min_size=1, max_size=4).map(events)


def actors(events: Sequence[Event]) -> List[str]:
    return sorted({a for a, _, _ in events})


@settings(max_examples=100, deadline=None)
@given(bursts(5, 10 * MINUTE), bursts(10, 10 * MINUTE), st.integers(0, 30), st.integers(0, HOUR - 1))
def test_every_burst_alerts_under_the_shipped_schedules(roles, logins, jitter, phase):
    for events, threshold in ((roles, 5), (logins, 10)):
        for stanza in splunk_correlations():
            if f"event_count >= {threshold} " not in stanza["search"]:
                continue
            alerts = splunk_alerts(stanza, events)
            assert sorted(a for _, a in alerts) == actors(events), stanza  # each burst, once
        for rule in elastic_correlations():
            if f"event_count >= {threshold} " not in rule["query"]:
                continue
            assert sorted({a for _, a in elastic_alerts(rule, events, jitter)}) == actors(events), rule[
                "name"
            ]
        for props in sentinel_correlations():
            if f"event_count >= {threshold} " not in props["query"]:
                continue
            alerts = sentinel_alerts(props, events, phase)
            assert sorted(a for _, a in alerts) == actors(events), props["displayName"]  # each, once


def test_the_look_back_covers_a_run_the_timespan_and_the_lag():
    assert {s["dispatch.index_earliest"] for s in splunk_correlations()} == {
        f"-{lookback_minutes(15, 600)}m@m"
    }
    assert {r["from"] for r in elastic_correlations()} == {f"now-{lookback_minutes(6, 600)}m"}
    assert len(sentinel_correlations()) == 2
    for props in sentinel_correlations():
        assert props["queryFrequency"] == "PT1H"
        assert f"ingestion_time() > ago({lookback_minutes(60, 600)}m)" in props["query"]
        assert "last_ingested > ago(60m)" in props["query"]  # new since the run before
    assert lookback_minutes(15, 600) == 15 + 10 + FORWARDER_LAG_MINUTES


def binned_alerts(events: Sequence[Event], threshold: int, every: int = 15 * MINUTE) -> List[Tuple[int, str]]:
    """What the searches before these windows did: every 15 minutes (Sentinel: every hour), the events
    indexed in the last 15 (the hour), counted per 10-minute bin of event time."""
    first, last = min(e[2] for e in events), max(e[2] for e in events)
    alerts = []
    for run in range(first - first % every, last + every, every):
        bins: Dict[Tuple[int, str], int] = {}
        for actor, happened, indexed in events:
            if run - every <= indexed < run:
                key = (happened // (10 * MINUTE), actor)
                bins[key] = bins.get(key, 0) + 1
        alerts += [(run, actor) for (_, actor), count in bins.items() if count >= threshold]
    return alerts


def test_a_burst_split_by_a_bin_edge_and_by_two_runs_alerts_once():
    """Five role changes in four minutes around 00:10, the last two indexed after the 00:15 run: the
    old search saw three, then two, in two bins each time; the shipped one alerts at 00:30, once."""
    (stanza,) = [s for s in splunk_correlations() if "event_count >= 5 " in s["search"]]
    base = 20 * DAY
    happened = [base + 8 * MINUTE + i * MINUTE for i in range(5)]
    indexed = [h + 2 * MINUTE if h < base + 11 * MINUTE else base + 16 * MINUTE for h in happened]
    events = [("actor", h, i) for h, i in zip(happened, indexed)]
    assert binned_alerts(events, 5) == []
    assert splunk_alerts(stanza, events) == [(base + 30 * MINUTE, "actor")]
    (rule,) = [r for r in elastic_correlations() if "event_count >= 5 " in r["query"]]
    assert {a for _, a in elastic_alerts(rule, events, jitter=0)} == {"actor"}


def test_a_burst_inside_one_bin_and_one_run_alerted_before_too():
    """The models agree with the old search where it worked: the difference is the bins and the runs."""
    (stanza,) = [s for s in splunk_correlations() if "event_count >= 5 " in s["search"]]
    events = [("actor", 20 * DAY + 61 * MINUTE + i * MINUTE, 20 * DAY + 66 * MINUTE) for i in range(5)]
    assert binned_alerts(events, 5) == splunk_alerts(stanza, events) == [(20 * DAY + 75 * MINUTE, "actor")]


def test_a_sentinel_burst_split_by_the_hour_and_its_bins_alerts_once():
    """Five role changes from 00:56 to 01:00, each ingested two minutes later: the hourly rule over
    10-minute bins saw them split between two runs and two bins; the shipped one alerts at 02:00,
    once (at 01:00 it had three)."""
    (props,) = [p for p in sentinel_correlations() if "event_count >= 5 " in p["query"]]
    base = 20 * DAY
    events = [("actor", base + m * MINUTE, base + (m + 2) * MINUTE) for m in range(56, 61)]
    assert binned_alerts(events, 5, every=HOUR) == []
    assert sentinel_alerts(props, events, phase=0) == [(base + 2 * HOUR, "actor")]


def test_a_late_resweep_alerts_on_the_records_time_not_on_its_arrival():
    """Records three days late arrive together, and Log Analytics stamps them all with their arrival:
    five role changes an hour apart stay quiet, five within four minutes alert once."""
    (props,) = [p for p in sentinel_correlations() if "event_count >= 5 " in p["query"]]
    arrival = 30 * DAY + 10 * MINUTE
    spread = [("slow", 27 * DAY + n * HOUR, arrival) for n in range(5)]
    burst = [("fast", 27 * DAY + n * MINUTE, arrival) for n in range(5)]
    assert {time_generated(h, i) for _, h, i in spread + burst} == {arrival}
    assert sentinel_alerts(props, spread + burst, phase=0) == [(30 * DAY + HOUR, "fast")]
