"""Sinks, one module each. The registry maps a FORWARDER_SINK URI scheme to the module that builds it.

Every sink module has ``open_sink(settings, retry_policy) -> Sink`` (its sink class, or a function)
and may have
``validate(settings)`` (ValueError: what could never work, found without opening anything),
``format_problem(event_format, settings)`` (a sink that takes only some event formats),
``probe(settings, retry_policy)`` (when proving it takes more than ``probe`` on an opened sink),
``TAKES_HEALTH_EVENTS = False`` (no place for the run's health event) and ``Options`` (a
``SinkOptions``: the settings only it reads, each naming its variable)."""

from __future__ import annotations

import dataclasses
import importlib
from types import ModuleType
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, cast
from urllib.parse import urlsplit

from ..plugins import Registry
from ..retry import REAL_TIME, Pace, RetryPolicy
from ..variables import Variable
from .base import Probed, Sink, probed
from .settings import SinkOptions, SinkSettings

SinkFactory = Callable[[SinkSettings, Optional[RetryPolicy]], Sink]

# scheme -> module; modules are imported only when chosen, so boto3 stays optional. The order is the
# README's for the sinks' own variables (``sink_variables``).
REGISTRY = Registry(
    "FORWARDER_SINK",
    "sink",
    {
        "stdout": "forwarder.sinks.stdout",
        "file": "forwarder.sinks.file",
        "hec+http": "forwarder.sinks.hec",
        "hec+https": "forwarder.sinks.hec",
        "https": "forwarder.sinks.http_ndjson",
        "http": "forwarder.sinks.http_ndjson",
        "syslog+tcp": "forwarder.sinks.syslog",
        "syslog+tls": "forwarder.sinks.syslog",
        "relp+tcp": "forwarder.sinks.relp",
        "relp+tls": "forwarder.sinks.relp",
        "elasticsearch+http": "forwarder.sinks.elasticsearch",
        "elasticsearch+https": "forwarder.sinks.elasticsearch",
        "opensearch+http": "forwarder.sinks.elasticsearch",
        "opensearch+https": "forwarder.sinks.elasticsearch",
        "secops+http": "forwarder.sinks.secops",
        "secops+https": "forwarder.sinks.secops",
        "sentinel+http": "forwarder.sinks.sentinel",
        "sentinel+https": "forwarder.sinks.sentinel",
        "securitylake": "forwarder.sinks.securitylake",
        "s3": "forwarder.sinks.s3",
        "firehose": "forwarder.sinks.firehose",
    },
)


def scheme_of(uri: str) -> str:
    """The registry key of a FORWARDER_SINK value: ``stdout`` or its URI scheme (``file:relative/path``
    has one too). The one parser of it: configuration and ``open_sink`` both ask here."""
    return "stdout" if uri == "stdout" else urlsplit(uri).scheme.lower()


def schemes() -> list[str]:
    return REGISTRY.keys()


def _module(settings: SinkSettings) -> ModuleType:
    return REGISTRY.load(scheme_of(settings.uri))


def _options_class(uri: str) -> Optional[Type[SinkOptions]]:
    kind: Optional[Type[SinkOptions]] = getattr(REGISTRY.load(scheme_of(uri)), "Options", None)
    return kind


def sink_options(uri: str, values: Mapping[str, Any]) -> Optional[SinkOptions]:
    """The options of the sink ``uri`` chooses, from parsed variable values by name (its module's
    ``Options``; None for a sink that has none); ValueError when that sink is not in this build."""
    kind = _options_class(uri)
    return kind.from_values(values) if kind else None


def own_variables(uri: str) -> Tuple[Variable, ...]:
    """The variables the sink ``uri`` chooses declares (importing that sink's module alone);
    ValueError when no sink of this build has its scheme."""
    kind = _options_class(uri)
    return kind.variables() if kind else ()


def sink_variables() -> Tuple[Variable, ...]:
    """The variables the sinks declare with their options, each once, in the registry's order (the
    configuration table collects them). Imports every sink module this build has."""
    found: Dict[str, Variable] = {}
    for name in REGISTRY.modules():
        try:
            kind: Optional[Type[SinkOptions]] = getattr(importlib.import_module(name), "Options", None)
        except ImportError:  # a sink this build lacks: choosing it says so
            continue
        for variable in kind.variables() if kind else ():
            found.setdefault(variable.name, variable)
    return tuple(found.values())


def health_settings(settings: SinkSettings) -> SinkSettings:
    """The settings for the run's health event: the same place, and the options the sink's ``Options``
    says for health (Splunk: the sourcetype ``<sourcetype>:health``, its own props)."""
    kind = _options_class(settings.uri)
    if kind is None:
        return settings
    return dataclasses.replace(settings, options=settings.options_of(kind).for_health())


def takes_health_events(settings: SinkSettings) -> bool:
    """Whether the chosen sink has a place for the run's health event."""
    return bool(getattr(_module(settings), "TAKES_HEALTH_EVENTS", True))


def sink_problems(settings: SinkSettings, event_format: str) -> List[str]:
    """What the chosen sink could never work with, each naming its variable, found without opening
    anything. The configuration check calls this for FORWARDER_SINK."""
    module = _module(settings)
    problems = []
    validate: Optional[Callable[[SinkSettings], None]] = getattr(module, "validate", None)
    try:
        if validate:
            validate(settings)
    except ValueError as exc:
        problems.append(str(exc) if str(exc).startswith("FORWARDER_") else f"FORWARDER_SINK: {exc}")
    format_problem: Optional[Callable[[str, SinkSettings], Optional[str]]] = getattr(
        module, "format_problem", None
    )
    problem = format_problem(event_format, settings) if format_problem and event_format else None
    return problems + ([f"FORWARDER_FORMAT: {problem}"] if problem else [])


def probe_sink(settings: SinkSettings, *, pace: Pace = REAL_TIME) -> str:
    """One line of what `check` proved about the sink without sending any event (reach it,
    authenticate, see that it can write, trying again as ``open_sink``'s sink does); SinkError (or
    ValueError) saying what failed and what to check otherwise."""
    module = _module(settings)
    policy = pace.policy(settings.max_attempts)
    probe: Optional[Callable[[SinkSettings, Optional[RetryPolicy]], str]] = getattr(module, "probe", None)
    return probe(settings, policy) if probe else probed(cast(Probed, module.open_sink(settings, policy)))


def open_sink(settings: SinkSettings, *, pace: Pace = REAL_TIME) -> Sink:
    """Build the sink for ``settings.uri``; ValueError names an unknown scheme or a bad URI. A sink
    that tries again does so FORWARDER_MAX_ATTEMPTS times, waiting at ``pace`` (every factory takes
    the retry policy)."""
    factory: SinkFactory = _module(settings).open_sink
    return factory(settings, pace.policy(settings.max_attempts))
