"""Settings from the environment, or from any mapping of values (a tenant of the tenants document, a
Splunk input's fields): a loop over the configuration table, then the rules that span variables. Bad
configuration fails before any network call with one problem per mistake, each naming the setting to
fix as the mapping names it, in the table's order."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from ..errors import ConfigError, Problem
from ..extras import AWS_VALUES, aws_problems
from ..kinds import Problems
from ..sinks import sink_options, sink_problems
from ..sinks.settings import SinkSettings
from .lists import LISTS
from .notices import unknown_variables, unmatched_filters
from .table import EVERYWHERE, Variable, variable_named, variables, variables_for


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
    index_revisit_s: Optional[int]
    users_cache_s: int
    log_level: str
    log_format: str = "auto"
    health_events: bool = True  # a health event through the sink after every run (forwarder/health.py)
    splunk_token: Optional[str] = field(default=None, repr=False)
    notices: Tuple[str, ...] = ()  # accepted, but likely not what was meant (config/notices.py)
    # The proxy the platform API is reached through, given by the runtime (the Splunk add-on's Proxy
    # page), not a variable: its URL, "" for none; None takes the environment's (HTTPS_PROXY, NO_PROXY).
    api_proxy: Optional[str] = field(default=None, repr=False)

    def secrets(self) -> list[str]:
        """Values that must never reach a log line."""
        headers = [v for k, v in self.sink.headers.items() if k.lower() != "content-type"]  # a media type
        options = self.sink.options.secrets() if self.sink.options else []
        proxy_password = urlsplit(self.api_proxy).password if self.api_proxy else None
        values = (self.client_secret, self.splunk_token, self.sink.token, *options, proxy_password, *headers)
        return [s for s in values if s]


def _text(variable: Variable, env: Mapping[str, str]) -> str:
    raw = env.get(variable.name)
    if raw is None or raw.strip() == "":
        return variable.default or ""
    return raw.strip()


def _parse(variable: Variable, env: Mapping[str, str], problems: List[Problem]) -> Any:
    """The variable's value, or None after adding its problems (each naming it) to ``problems``."""
    try:
        return variable.kind.parse(_text(variable, env))
    except Problems as exc:
        problems.extend(Problem(variable.name, m) for m in exc.messages)
    except ValueError as exc:
        problems.append(Problem(variable.name, str(exc)))
    return None


def _parsed(texts: Iterable[str]) -> List[Problem]:
    """Problems told as ``FORWARDER_X: ...`` texts (the sinks' and the extras' rules)."""
    return [Problem.parse(text) for text in texts]


def read_all(env: Mapping[str, str], names: Sequence[str]) -> Dict[str, Any]:
    """These variables' values by name, for the modules that read their own (tenants, Lambda,
    fan-out); ConfigError naming each one that is wrong."""
    problems: List[Problem] = []
    values = {name: _parse(variable_named(name), env, problems) for name in names}
    problems += _parsed(aws_problems(env, [name for name in names if name in AWS_VALUES]))
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


def _credential_problems(
    env: Mapping[str, str], values: Dict[str, Any], name: Dict[str, str]
) -> List[Problem]:
    """The client id and secret are required unless FORWARDER_CREDENTIALS is set (even set wrong:
    its own problem says what to fix). ``name``: the caller's names of the variables."""
    if _text(variable_named("FORWARDER_CREDENTIALS"), env):
        return []
    alternative = name.get("FORWARDER_CREDENTIALS", "FORWARDER_CREDENTIALS")
    pairs = (("FORWARDER_CLIENT_ID", "client_id"), ("FORWARDER_CLIENT_SECRET", "client_secret"))
    return [Problem(var, f"required (or set {alternative})") for var, key in pairs if not values.get(key)]


def _splunk_token_problems(values: Dict[str, Any]) -> List[Problem]:
    """A ``kvstore://`` state is read with FORWARDER_SPLUNK_TOKEN: say so before any network call."""
    state = values.get("state") or ""
    if state.lower().startswith("kvstore://") and not values.get("splunk_token"):
        return [
            Problem(
                "FORWARDER_SPLUNK_TOKEN", "required for a kvstore:// FORWARDER_STATE (a splunkd session key)"
            )
        ]
    return []


def _as_text(variable: Variable, value: Any) -> str:
    """A value as the variable's text: text itself; for a document (JSON), a list of strings for a
    list, a flag or a number for the others. ValueError for any other type."""
    listed = isinstance(variable.kind, LISTS)
    if listed and isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise ValueError("expected a list of strings")
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) or (isinstance(value, (int, float)) and not listed):
        return str(value)
    raise ValueError(f"expected {'a list of strings or a comma list' if listed else 'text'}")


def _read_by(mapping: Mapping[str, Any], names: Mapping[str, str]) -> Tuple[Tuple[Variable, ...], bool]:
    """The variables ``mapping`` is read by, and whether they are all there are: the core's and its
    sink's own, importing that sink alone (a run pays for no other sink's module); every variable
    when it sets one of neither (another sink's, checked as before; or none, which a notice names)
    or names a sink this build lacks (its problem says so)."""
    sink_key = next((key for key, name in names.items() if name == "FORWARDER_SINK"), "FORWARDER_SINK")
    sink = mapping.get(sink_key)
    try:
        read = variables_for(sink if isinstance(sink, str) else None)
    except ValueError:
        return variables(), True
    known = {v.name for v in read}
    if any(
        name.startswith("FORWARDER_") and name not in known for name in (names.get(k, k) for k in mapping)
    ):
        return variables(), True
    return read, False


def _texts(
    mapping: Mapping[str, Any], names: Mapping[str, str], known: Mapping[str, Variable]
) -> Tuple[Dict[str, str], List[Problem]]:
    """Each variable's text from ``mapping``: under the caller's key for it (``names``) when given,
    else under its own name; and the problems of values of the wrong type (the variable then
    reads as if that key were not given)."""
    own = [(key, key) for key in mapping if key in known and key not in names]
    texts: Dict[str, str] = {}
    problems: List[Problem] = []
    for key, variable in own + [(key, v) for key, v in names.items() if key in mapping]:
        try:
            texts[variable] = _as_text(known[variable], mapping[key])
        except ValueError as exc:
            problems.append(Problem(variable, str(exc)))
    return texts, problems


def settings_from(
    mapping: Mapping[str, Any], names: Optional[Mapping[str, str]] = None, *, api_proxy: Optional[str] = None
) -> Settings:
    """Build Settings from ``mapping``, keyed by the caller's own names: ``names`` maps a key of the
    caller's (a tenant document's field, a Splunk input's field) to the variable it sets; any other
    key naming a variable sets it, as in an environment. A variable given by neither takes its
    default. Raise ConfigError listing every problem, each naming the setting to fix: the caller's
    key for its variable when ``names`` has one (given or not), the variable otherwise.
    ``api_proxy``: see ``Settings.api_proxy``."""
    names = names or {}
    read, everything = _read_by(mapping, names)
    known = {v.name: v for v in read}
    env, problems = _texts(mapping, names, known)
    values: Dict[str, Any] = {}
    sink: Dict[str, Any] = {}
    options: Dict[str, Any] = {}  # of the sinks' own variables, by name: the chosen sink takes its own
    for variable in read:
        if variable.sink_option:
            options[variable.name] = _parse(variable, env, problems)
        elif variable.field and variable.where == EVERYWHERE:
            value = _parse(variable, env, problems)
            target, _, key = variable.field.rpartition(".")
            (sink if target == "sink" else values)[key] = value
    name = {variable: key for key, variable in names.items()}
    problems += _credential_problems(env, values, name) + _splunk_token_problems(values)
    # (of the variables Settings holds: forwarder/tenants.py checks FORWARDER_TENANTS)
    problems += _parsed(
        aws_problems(env, [v for v in AWS_VALUES if v in known and (known[v].field or known[v].sink_option)])
    )
    given = {"uri": "", **{k: v for k, v in sink.items() if v is not None}}  # else SinkSettings' own
    sink_settings = SinkSettings(
        **given, timeout_seconds=values["http_timeout_s"] or 60.0, max_attempts=values["max_attempts"] or 5
    )
    if sink["uri"] is not None:  # a scheme the registry knows: the sink's own options and rules
        try:
            sink_settings = replace(sink_settings, options=sink_options(sink["uri"], options))
            problems += _parsed(sink_problems(sink_settings, values["format"] or ""))
        except ValueError as exc:  # that sink is not in this build
            problems += _parsed([str(exc)])
    if problems:
        order = {v.name: n for n, v in enumerate(read)}  # the table's order
        ordered = sorted(problems, key=lambda p: order.get(p.variable, len(order)))
        raise ConfigError([Problem(name.get(p.variable, p.variable), p.message) for p in ordered])
    # (read by the chosen sink's variables alone, the mapping set no variable of no setting)
    notices = (unknown_variables(mapping) if everything else []) + unmatched_filters(values["filters"])
    return Settings(**values, sink=sink_settings, notices=tuple(notices), api_proxy=api_proxy)


def load_settings(env: Mapping[str, str]) -> Settings:
    """Build Settings from environment-style variables; raise ConfigError listing every problem."""
    return settings_from(env)
