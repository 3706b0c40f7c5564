"""Every delivered event is evaluated by the shipped schedules, however late it reached the SIEM.

Events arrive a poll interval after they happen, late records (a re-sweep) up to days after. The
schedules are read from what the build ships (savedsearches.conf, the Kibana import files, the
Sentinel templates) and replayed over deliveries with such lags: each event must fall in a window of
some run, selected by when it was indexed; selecting by event time (the old schedule) misses the late
ones. The forwarder's own health events go through the lag and failure rules' schedules the same way.

Google SecOps is not replayed: its YARA-L rules (secops/rules/) ship no schedule. The engine runs a
rule without a match window (the single-event ones) on each event as it is ingested, and schedules
the windowed ones (the bursts) itself from their match window; nothing here sets a time range that
could leave a late event out. No health rule is written for SecOps."""

from __future__ import annotations

import configparser
import functools
import json
import re
from pathlib import Path
from typing import FrozenSet, List, Tuple

import health_detections
from compile_detections import ELASTIC_OUT, SENTINEL_OUT
from health_detections import Health
from hypothesis import example, given, settings
from hypothesis import strategies as st

from forwarder.retry import RetryPolicy

MINUTE, HOUR, DAY = 60, 3600, 86400
_UNITS = {"s": 1, "m": MINUTE, "h": HOUR, "d": DAY}

# (happened, indexed) in seconds: indexed = happened + a lag from seconds to 13 days
deliveries = st.lists(
    st.tuples(st.integers(10 * DAY, 40 * DAY), st.integers(1, 13 * DAY)).map(lambda p: (p[0], p[0] + p[1])),
    min_size=1,
    max_size=50,
)

# A health event is stamped when its run finished and sent right after it: indexed within the sink's
# tries (FORWARDER_MAX_ATTEMPTS of up to FORWARDER_HTTP_TIMEOUT each, default 60 s, a Retry-After
# capped between them) and the SIEM's flush. Or, accepted by a SIEM that was not indexing (a blocked
# HEC queue, a red cluster, a Log Analytics backlog), hours to days later once it recovers. One the
# sink refused is not sent again: that gap is the silence rule's.
HTTP_TIMEOUT, RETRY = 60, RetryPolicy()  # FORWARDER_HTTP_TIMEOUT's default, the sinks' policy
SINK_TRIES = RETRY.attempts * HTTP_TIMEOUT + (RETRY.attempts - 1) * int(RETRY.max_retry_after)
health_deliveries = st.lists(
    st.tuples(
        st.integers(10 * DAY, 40 * DAY),
        st.one_of(st.integers(0, SINK_TRIES + MINUTE), st.integers(HOUR, 13 * DAY)),
    ).map(lambda p: (p[0], p[0] + p[1])),
    min_size=1,
    max_size=50,
)
# Always replayed: on a run's boundary, after every try, after an outage of hours, of more than the two
# days Log Analytics keeps a row's own time for, and of 13 days.
AFTER_OUTAGES = [
    (20 * DAY - 5, 20 * DAY),
    (20 * DAY, 20 * DAY + SINK_TRIES),
    (20 * DAY + 17, 20 * DAY + 3 * HOUR),
    (20 * DAY + 17, 23 * DAY),
    (20 * DAY + 17, 33 * DAY + 1),
]


@functools.cache  # compiled once, replayed over every example
def health() -> Health:
    return Health.compile()


@functools.cache
def health_titles() -> FrozenSet[str]:
    """The health lag and failure rules. The silence rule is left out on purpose: it is a window, not
    a selection of new events. Every 15 minutes it reads each forwarder's newest health event of the
    last seven days by event time (so every event is read by many runs), and an event that comes late
    is the very thing it reports; test_health_rules.py fires it where runs stop."""
    return frozenset(compiled.rule.title for compiled in health().splunk)


def splunk_time(spec: str, now: int) -> int:
    """A Splunk relative time (`-15m@m`, `@m`, `+1d@d`) at ``now``."""
    match = re.fullmatch(r"([+-]\d+)([smhd])?(?:@([smhd]))?", spec) or re.fullmatch(r"@([smhd])", spec)
    assert match, spec
    if spec.startswith("@"):
        return now - now % _UNITS[match.group(1)]
    at = now + int(match.group(1)) * _UNITS[match.group(2)]
    return at - at % _UNITS[match.group(3)] if match.group(3) else at


@functools.cache
def splunk_conf() -> configparser.RawConfigParser:
    """The add-on's savedsearches.conf: audit, health and native searches."""
    conf = configparser.RawConfigParser(delimiters=("=",), strict=True)
    conf.optionxform = str
    conf.read_string(health().savedsearches())
    return conf


@functools.cache
def splunk_stanzas() -> List[configparser.SectionProxy]:
    """One stanza per distinct schedule among the shipped single-event audit searches (the
    correlations read further back on purpose: test_correlation_windows.py replays bursts through
    them; the health searches are replayed below)."""
    conf = splunk_conf()
    keys = ("cron_schedule", "dispatch.earliest_time", "dispatch.latest_time", "dispatch.index_earliest")
    audit = [conf[name] for name in conf.sections() if "emailauth:audit:health" not in conf[name]["search"]]
    single = [stanza for stanza in audit if "| streamstats " not in stanza["search"]]
    distinct = {tuple(stanza.get(k) for k in keys): stanza for stanza in single}
    return list(distinct.values())


def splunk_runs(stanza: configparser.SectionProxy, start: int, end: int) -> List[int]:
    minutes = re.fullmatch(r"\*/(\d+) \* \* \* \*", stanza["cron_schedule"])
    assert minutes, stanza["cron_schedule"]
    step = int(minutes.group(1)) * MINUTE
    return list(range(start - start % step, end + step, step))


def splunk_evaluations(stanza: configparser.SectionProxy, event: Tuple[int, int]) -> int:
    """How many runs of the search select ``event`` (happened, indexed)."""
    happened, indexed = event
    count = 0
    for run in splunk_runs(stanza, indexed - HOUR, indexed + HOUR):  # windows are minutes long
        by_event = splunk_time(stanza["dispatch.earliest_time"], run) <= happened
        by_event = by_event and happened < splunk_time(stanza["dispatch.latest_time"], run)
        if "dispatch.index_earliest" in stanza:
            index_from = splunk_time(stanza["dispatch.index_earliest"], run)
            index_to = splunk_time(stanza["dispatch.index_latest"], run)
            count += by_event and index_from <= indexed < index_to and indexed <= run
        else:  # by event time alone: only what was indexed when the run went
            count += by_event and indexed <= run
    return count


@settings(max_examples=100, deadline=None)
@given(deliveries)
def test_every_splunk_search_evaluates_each_delivered_event_exactly_once(events):
    for stanza in splunk_stanzas():  # every search has its schedule: one per distinct schedule
        assert [splunk_evaluations(stanza, e) for e in events] == [1] * len(events), stanza.name


def test_selecting_by_event_time_missed_late_events():
    old = {"cron_schedule": "*/15 * * * *", "dispatch.earliest_time": "-15m@m", "dispatch.latest_time": "@m"}
    conf = configparser.RawConfigParser()
    conf.read_dict({"old": old})
    late = (20 * DAY, 20 * DAY + 2 * HOUR)  # a record that reached the API two hours late
    assert splunk_evaluations(conf["old"], late) == 0


@functools.cache
def splunk_health_stanzas() -> List[configparser.SectionProxy]:
    return [splunk_conf()[title] for title in sorted(health_titles())]


@settings(max_examples=100, deadline=None)
@given(health_deliveries)
@example(AFTER_OUTAGES)
def test_every_splunk_health_search_evaluates_each_health_event_exactly_once(events):
    for stanza in splunk_health_stanzas():
        assert [splunk_evaluations(stanza, e) for e in events] == [1] * len(events), stanza.name


@functools.cache
def elastic_rules(path: Path = ELASTIC_OUT) -> List[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def elastic_evaluations(rule: dict, event: Tuple[int, int], jitter: int) -> int:
    """Runs every ``interval`` (each started up to ``jitter`` s late) over [now - from, now] of the
    override field: how many select ``event``."""
    assert rule["timestamp_override"] == "event.ingested"  # the time the ingest pipeline stamps
    interval = int(rule["interval"][:-1]) * _UNITS[rule["interval"][-1]]
    lookback = re.fullmatch(r"now-(\d+)([smhd])", rule["from"])
    assert lookback and rule["to"] == "now"
    span = int(lookback.group(1)) * _UNITS[lookback.group(2)]
    _, indexed = event
    runs = [t + jitter for t in range(indexed - indexed % interval, indexed + 2 * interval, interval)]
    return sum(run - span <= indexed <= run for run in runs)


@settings(max_examples=100, deadline=None)
@given(deliveries, st.integers(0, 30))
def test_every_elastic_rule_evaluates_each_delivered_event(events, jitter):
    """At least once; where the windows overlap the detection engine keeps one alert per source
    document and rule."""
    for rule in elastic_rules():
        assert all(elastic_evaluations(rule, e, jitter) >= 1 for e in events), rule["name"]


@functools.cache
def elastic_health_rules() -> List[dict]:
    return [r for r in elastic_rules(health_detections.ELASTIC_OUT) if r["name"] in health_titles()]


@settings(max_examples=100, deadline=None)
@given(health_deliveries, st.integers(0, 30))
@example(AFTER_OUTAGES, 30)
def test_every_elastic_health_rule_evaluates_each_health_event(events, jitter):
    for rule in elastic_health_rules():
        assert all(elastic_evaluations(rule, e, jitter) >= 1 for e in events), rule["name"]


# Log Analytics keeps a row's TimeGenerated unless it is more than two days before the row arrived (or
# a day after): then the row gets the time it arrived. A rule's queryPeriod filters on TimeGenerated.
TIME_GENERATED_MAX_AGE = 2 * DAY


def time_generated(happened: int, ingested: int) -> int:
    return happened if ingested - happened <= TIME_GENERATED_MAX_AGE else ingested


def iso_seconds(duration: str) -> int:
    """An ISO 8601 duration of one unit (`PT1H`, `P14D`, `PT5M`) in seconds."""
    match = re.fullmatch(r"P(?:(\d+)D|T(\d+)([HMS]))", duration)
    assert match, duration
    if match.group(1):
        return int(match.group(1)) * DAY
    return int(match.group(2)) * _UNITS[match.group(3).lower()]


@functools.cache
def sentinel_rules(path: Path = SENTINEL_OUT) -> List[dict]:
    return [r["properties"] for r in json.loads(path.read_text(encoding="utf-8"))["resources"]]


def sentinel_runs(props: dict, start: int, end: int, phase: int) -> List[int]:
    """The runs, every queryFrequency from when the rule was enabled (``phase`` into the frequency)."""
    step = iso_seconds(props["queryFrequency"])
    return list(range(start - start % step + phase - step, end + 2 * step, step))


def sentinel_selects(props: dict, event: Tuple[int, int], run: int, window: int) -> bool:
    """Whether the run at ``run`` reads ``event`` (happened, ingested): ingested in the ``window``
    before the run (`ingestion_time() > ago(...)`) and TimeGenerated within the queryPeriod."""
    happened, ingested = event
    stamped = time_generated(happened, ingested)
    return run - iso_seconds(props["queryPeriod"]) <= stamped <= run and run - window < ingested <= run


def sentinel_window(query: str) -> int:
    found = re.search(r"ingestion_time\(\) > ago\((\d+)([mhd])\)", query)
    assert found, query
    return int(found.group(1)) * _UNITS[found.group(2)]


def sentinel_evaluations(props: dict, event: Tuple[int, int], phase: int) -> int:
    _, ingested = event
    window = sentinel_window(props["query"])
    runs = sentinel_runs(props, ingested, ingested, phase)
    return sum(sentinel_selects(props, event, run, window) for run in runs)


@functools.cache
def sentinel_single_event_rules() -> List[dict]:
    """One rule per distinct schedule and window among the single-event rules (the correlations read
    further back on purpose: test_correlation_windows.py replays bursts through them)."""
    single = [p for p in sentinel_rules() if not p["query"].startswith("let sigma_events")]
    keys = ("queryFrequency", "queryPeriod")
    return list({(*(p[k] for k in keys), sentinel_window(p["query"])): p for p in single}.values())


@settings(max_examples=100, deadline=None)
@given(deliveries, st.integers(0, HOUR - 1))
def test_every_sentinel_rule_evaluates_each_delivered_event_exactly_once(events, phase):
    """Late ones too: a row more than two days late is stamped with its arrival, inside the period."""
    for props in sentinel_single_event_rules():
        assert [sentinel_evaluations(props, e, phase) for e in events] == [1] * len(events), props


def test_selecting_sentinel_rows_by_time_generated_missed_late_ones():
    (props,) = sentinel_single_event_rules()
    late = (20 * DAY, 20 * DAY + 2 * HOUR)  # a record that reached the API two hours late
    runs = sentinel_runs(props, late[1], late[1], phase=0)
    assert sum(sentinel_selects(props, late, run, HOUR) for run in runs) == 1
    # `where TimeGenerated > ago(1h)`: no run has it both ingested and within the hour
    assert not any(run - HOUR < late[0] and late[1] <= run for run in runs)


@functools.cache
def sentinel_health_rules() -> List[dict]:
    rules = sentinel_rules(health_detections.SENTINEL_OUT)
    return [props for props in rules if props["displayName"] in health_titles()]


@settings(max_examples=100, deadline=None)
@given(health_deliveries, st.integers(0, HOUR - 1))
@example(AFTER_OUTAGES, HOUR - 1)
def test_every_sentinel_health_rule_evaluates_each_health_event_exactly_once(events, phase):
    for props in sentinel_health_rules():
        assert [sentinel_evaluations(props, e, phase) for e in events] == [1] * len(events), props


def test_the_health_replay_covers_the_lag_and_failure_rules_of_every_backend():
    """Only the silence rule is left out (see ``health_titles``), on every backend."""
    silence = {rule["title"] for rule in health().native}
    assert health_titles() == {
        "EmailAuth forwarder lagging behind the audit trail",
        "EmailAuth forwarder run failed",
    }
    assert {stanza.name for stanza in splunk_health_stanzas()} == health_titles()
    health_stanzas = {
        n for n in splunk_conf().sections() if "emailauth:audit:health" in splunk_conf()[n]["search"]
    }
    assert health_stanzas == health_titles() | silence
    elastic = {r["name"] for r in elastic_rules(health_detections.ELASTIC_OUT)}
    sentinel = {p["displayName"] for p in sentinel_rules(health_detections.SENTINEL_OUT)}
    assert elastic == sentinel == health_titles() | silence
    assert {r["name"] for r in elastic_health_rules()} == {p["displayName"] for p in sentinel_health_rules()}
    assert len(elastic_health_rules()) == len(sentinel_health_rules()) == 2
