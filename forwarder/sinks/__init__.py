"""Sinks, one module each. The registry maps a FORWARDER_SINK URI scheme to the module that builds it."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from ..logs import quoted
from ..retry import REAL_TIME, Pace, RetryPolicy
from .base import Sink
from .settings import SinkSettings

SinkFactory = Callable[[SinkSettings, Optional[RetryPolicy]], Sink]

# scheme -> "module:factory"; modules are imported only when chosen, so boto3 stays optional.
_REGISTRY: Dict[str, str] = {
    "stdout": "forwarder.sinks.stdout:open_stdout",
    "file": "forwarder.sinks.file:open_file",
    "hec+https": "forwarder.sinks.hec:open_hec",
    "hec+http": "forwarder.sinks.hec:open_hec",
    "elasticsearch+https": "forwarder.sinks.elasticsearch:open_elasticsearch",
    "elasticsearch+http": "forwarder.sinks.elasticsearch:open_elasticsearch",
    "opensearch+https": "forwarder.sinks.elasticsearch:open_elasticsearch",
    "opensearch+http": "forwarder.sinks.elasticsearch:open_elasticsearch",
    "https": "forwarder.sinks.http_ndjson:open_http_ndjson",
    "http": "forwarder.sinks.http_ndjson:open_http_ndjson",
    "s3": "forwarder.sinks.s3:open_s3",
    "firehose": "forwarder.sinks.firehose:open_firehose",
    "securitylake": "forwarder.sinks.securitylake:open_securitylake",
    "syslog+tcp": "forwarder.sinks.syslog:open_syslog",
    "syslog+tls": "forwarder.sinks.syslog:open_syslog",
    "relp+tcp": "forwarder.sinks.relp:open_relp",
    "relp+tls": "forwarder.sinks.relp:open_relp",
    "sentinel+https": "forwarder.sinks.sentinel:open_sentinel",
    "sentinel+http": "forwarder.sinks.sentinel:open_sentinel",
    "secops+https": "forwarder.sinks.secops:open_secops",
    "secops+http": "forwarder.sinks.secops:open_secops",
}


def scheme_of(uri: str) -> str:
    """The registry key of a FORWARDER_SINK value: ``stdout`` or its URI scheme (``file:relative/path``
    has one too). The one parser of it: configuration and ``open_sink`` both ask here."""
    return "stdout" if uri == "stdout" else urlsplit(uri).scheme.lower()


def schemes() -> list[str]:
    return sorted(_REGISTRY)


def _module(settings: SinkSettings) -> Tuple[Any, str]:
    scheme = scheme_of(settings.uri)
    try:
        target = _REGISTRY[scheme]
    except KeyError:
        raise ValueError(
            f"FORWARDER_SINK scheme {quoted(scheme)} is not supported (choose from {', '.join(schemes())})"
        ) from None
    module, attr = target.split(":")
    return importlib.import_module(module), attr


def takes_health_events(settings: SinkSettings) -> bool:
    """Whether the chosen sink has a place for the run's health event (a module that has none says
    ``TAKES_HEALTH_EVENTS = False``)."""
    module, _ = _module(settings)
    return bool(getattr(module, "TAKES_HEALTH_EVENTS", True))


def sink_problems(settings: SinkSettings, event_format: str) -> List[str]:
    """What the chosen sink could never work with, each naming its variable, found without opening
    anything: every sink module has a ``validate`` (ValueError), and a sink that takes only some event
    formats has a ``format_problem``. The configuration check calls this for FORWARDER_SINK."""
    module, _ = _module(settings)
    problems = []
    try:
        module.validate(settings)
    except ValueError as exc:
        problems.append(str(exc) if str(exc).startswith("FORWARDER_") else f"FORWARDER_SINK: {exc}")
    format_problem: Optional[Callable[[str, SinkSettings], Optional[str]]] = getattr(
        module, "format_problem", None
    )
    problem = format_problem(event_format, settings) if format_problem and event_format else None
    return problems + ([f"FORWARDER_FORMAT: {problem}"] if problem else [])


def probe_sink(settings: SinkSettings, *, pace: Pace = REAL_TIME) -> str:
    """One line of what `check` proved about the sink without sending any event (every sink module has
    a ``probe``: reach it, authenticate, see that it can write, trying again as ``open_sink``'s sink
    does); SinkError (or ValueError) saying what failed and what to check otherwise."""
    module, _ = _module(settings)
    probe: Callable[[SinkSettings, Optional[RetryPolicy]], str] = module.probe
    return probe(settings, pace.policy(settings.max_attempts))


def open_sink(settings: SinkSettings, *, pace: Pace = REAL_TIME) -> Sink:
    """Build the sink for ``settings.uri``; ValueError names an unknown scheme or a bad URI. A sink
    that tries again does so FORWARDER_MAX_ATTEMPTS times, waiting at ``pace`` (every factory takes
    the retry policy)."""
    module, attr = _module(settings)
    factory: SinkFactory = getattr(module, attr)
    return factory(settings, pace.policy(settings.max_attempts))
