"""Sinks, one module each. The registry maps a FORWARDER_SINK URI scheme to the module that builds it."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, Tuple
from urllib.parse import urlsplit

from .base import Sink
from .settings import SinkSettings

SinkFactory = Callable[[SinkSettings], Sink]

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
    "syslog+tcp": "forwarder.sinks.syslog:open_syslog",
    "syslog+tls": "forwarder.sinks.syslog:open_syslog",
}


def scheme_of(uri: str) -> str:
    return "stdout" if uri == "stdout" else urlsplit(uri).scheme.lower()


def schemes() -> list[str]:
    return sorted(_REGISTRY)


def _module(settings: SinkSettings) -> Tuple[Any, str]:
    scheme = scheme_of(settings.uri)
    try:
        target = _REGISTRY[scheme]
    except KeyError:
        raise ValueError(
            f"FORWARDER_SINK scheme {scheme!r} is not supported (choose from {', '.join(schemes())})"
        ) from None
    module, attr = target.split(":")
    return importlib.import_module(module), attr


def check_sink(settings: SinkSettings) -> None:
    """Refuse settings the sink could never work with (ValueError naming the variable), without
    opening anything: every sink module has a ``validate`` that the configuration check calls."""
    module, _ = _module(settings)
    module.validate(settings)


def open_sink(settings: SinkSettings) -> Sink:
    """Build the sink for ``settings.uri``; ValueError names an unknown scheme or a bad URI."""
    module, attr = _module(settings)
    factory: SinkFactory = getattr(module, attr)
    return factory(settings)
