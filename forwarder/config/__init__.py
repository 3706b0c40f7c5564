"""The configuration contract (DESIGN §6): one table of settings (``table``) drives the parsing of
the environment or of any mapping of values (``settings``), CLI flags, the README table and the
runtimes' mappings. Bad configuration fails before any network call, one message per problem.

Importing this package loads no sink module and neither ``requests`` nor ``boto3``."""

from typing import Any

from . import table
from .settings import Settings, load_settings, parse_log_format, read, read_all, settings_from
from .table import (
    EVERYWHERE,
    FANOUT,
    FORMATS,
    LAMBDA,
    LOG_FORMATS,
    MAX_LOOKBACK_S,
    OBJECT_TYPES,
    Variable,
    default_of,
    splunk_fields,
)

__all__ = [
    "EVERYWHERE",
    "FANOUT",
    "FORMATS",
    "LAMBDA",
    "LOG_FORMATS",
    "MAX_LOOKBACK_S",
    "OBJECT_TYPES",
    "VARIABLES",
    "Settings",
    "Variable",
    "default_of",
    "load_settings",
    "parse_log_format",
    "read",
    "read_all",
    "settings_from",
    "splunk_fields",
]


def __getattr__(name: str) -> Any:
    """``VARIABLES``: every variable, the sinks' own too (built on first use, importing the sinks)."""
    if name == "VARIABLES":
        return table.variables()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
