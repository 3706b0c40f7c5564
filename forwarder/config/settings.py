"""Settings from the environment: a loop over the configuration table, then the rules that span
variables. Bad configuration fails before any network call with one message per problem, each naming
its variable, in the table's order."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ConfigError
from ..extras import AWS_VALUES, aws_problems
from ..sinks import sink_problems
from ..sinks.settings import SinkSettings
from .kinds import Problems
from .notices import unknown_variables, unmatched_filters
from .table import BY_NAME, EVERYWHERE, VARIABLES, Variable


@dataclass(frozen=True)
class Settings:
    api_url: str
    client_id: Optional[str]
    client_secret: Optional[str] = field(repr=False)
    credentials_ref: Optional[str]
    token_path: str
    object_types: Tuple[str, ...]
    users: Tuple[str, ...]
    max_users: int
    domains: Tuple[str, ...]
    discover_domains: bool
    filters: Tuple[str, ...]
    state: str
    quarantine: str
    sink: SinkSettings
    format: str
    include_original: bool
    vendor: str
    product: str
    initial_lookback_s: int
    lookback_window_s: int
    tie_margin_s: int
    page_limit: int
    max_pages: int
    max_records_per_pass: int
    concurrency: int
    max_rps: Optional[float]
    http_timeout_s: float
    max_attempts: int
    lease_ttl_s: int
    schedule_interval_s: int
    run_budget_calls: Optional[int]
    run_budget_time_s: Optional[int]
    hot_window_s: Optional[int]
    cold_revisit_s: Optional[int]
    domain_revisit_s: Optional[int]
    users_cache_s: int
    log_level: str
    log_format: str = "auto"
    health_events: bool = True  # a health event through the sink after every run (forwarder/health.py)
    splunk_token: Optional[str] = field(default=None, repr=False)
    notices: Tuple[str, ...] = ()  # accepted, but likely not what was meant (config/notices.py)

    def secrets(self) -> list[str]:
        """Values that must never reach a log line."""
        headers = [v for k, v in self.sink.headers.items() if k.lower() != "content-type"]  # a media type
        values = (
            self.client_secret,
            self.splunk_token,
            self.sink.token,
            self.sink.azure_client_secret,
            *headers,
        )
        return [s for s in values if s]


def _text(variable: Variable, env: Mapping[str, str]) -> str:
    raw = env.get(variable.name)
    if raw is None or raw.strip() == "":
        return variable.default or ""
    return raw.strip()


def _parse(variable: Variable, env: Mapping[str, str], problems: List[str]) -> Any:
    """The variable's value, or None after adding its problems (each naming it) to ``problems``."""
    try:
        return variable.kind.parse(_text(variable, env))
    except Problems as exc:
        problems.extend(f"{variable.name}: {m}" for m in exc.messages)
    except ValueError as exc:
        problems.append(f"{variable.name}: {exc}")
    return None


def read_all(env: Mapping[str, str], names: Sequence[str]) -> Dict[str, Any]:
    """These variables' values by name, for the modules that read their own (tenants, Lambda,
    fan-out); ConfigError naming each one that is wrong."""
    problems: List[str] = []
    values = {name: _parse(BY_NAME[name], env, problems) for name in names}
    problems += aws_problems(env, [name for name in names if name in AWS_VALUES])
    if problems:
        raise ConfigError(problems)
    return values


def read(env: Mapping[str, str], name: str) -> Any:
    """One variable's value (see ``read_all``)."""
    return read_all(env, (name,))[name]


def parse_log_format(raw: Optional[str]) -> str:
    """FORWARDER_LOG_FORMAT's value; ValueError names the choices. Also read alone by the commands that
    need no other setting (demo, state)."""
    try:
        return str(read({"FORWARDER_LOG_FORMAT": raw or ""}, "FORWARDER_LOG_FORMAT"))
    except ConfigError as exc:
        raise ValueError(exc.problems[0]) from None


def _credential_problems(env: Mapping[str, str], values: Dict[str, Any]) -> List[str]:
    """The client id and secret are required unless FORWARDER_CREDENTIALS is set (even set wrong:
    its own problem says what to fix)."""
    if _text(BY_NAME["FORWARDER_CREDENTIALS"], env):
        return []
    pairs = (("FORWARDER_CLIENT_ID", "client_id"), ("FORWARDER_CLIENT_SECRET", "client_secret"))
    return [f"{name}: required (or set FORWARDER_CREDENTIALS)" for name, key in pairs if not values.get(key)]


def _splunk_token_problems(values: Dict[str, Any]) -> List[str]:
    """A ``kvstore://`` state is read with FORWARDER_SPLUNK_TOKEN: say so before any network call."""
    state = values.get("state") or ""
    if state.lower().startswith("kvstore://") and not values.get("splunk_token"):
        return ["FORWARDER_SPLUNK_TOKEN: required for a kvstore:// FORWARDER_STATE (a splunkd session key)"]
    return []


_ORDER = {v.name: i for i, v in enumerate(VARIABLES)}
_NAMED = re.compile(r"^FORWARDER_[A-Z0-9_]+")


def _position(problem: str) -> int:
    match = _NAMED.match(problem)
    return _ORDER.get(match.group(0) if match else "", len(_ORDER))


def load_settings(env: Mapping[str, str]) -> Settings:
    """Build Settings from environment-style variables; raise ConfigError listing every problem."""
    problems: List[str] = []
    values: Dict[str, Any] = {}
    sink: Dict[str, Any] = {}
    for variable in VARIABLES:
        if variable.field and variable.where == EVERYWHERE:
            value = _parse(variable, env, problems)
            target, _, key = variable.field.rpartition(".")
            (sink if target == "sink" else values)[key] = value
    problems += _credential_problems(env, values) + _splunk_token_problems(values)
    # (of the variables Settings holds: forwarder/tenants.py checks FORWARDER_TENANTS)
    problems += aws_problems(env, [v for v in AWS_VALUES if BY_NAME[v].field])
    given = {"uri": "", **{k: v for k, v in sink.items() if v is not None}}  # else SinkSettings' own
    sink_settings = SinkSettings(
        **given, timeout_seconds=values["http_timeout_s"] or 60.0, max_attempts=values["max_attempts"] or 5
    )
    if sink["uri"] is not None:  # a scheme the registry knows: the sink's own rules
        problems += sink_problems(sink_settings, values["format"] or "")
    if problems:
        raise ConfigError(sorted(problems, key=_position))
    notices = unknown_variables(env) + unmatched_filters(values["filters"])
    return Settings(**values, sink=sink_settings, notices=tuple(notices))
