"""The configuration contract (DESIGN §6): one table of settings (``table``) drives the parsing of
the environment or of any mapping of values (``settings``), CLI flags, the README table and the
runtimes' mappings. Bad configuration fails before any network call, one message per problem.

Importing this package loads no sink module and neither ``requests`` nor ``boto3``."""

from .settings import Settings, load_settings, parse_log_format, read, read_all, settings_from
from .table import (
    EVERYWHERE,
    FANOUT,
    FORMATS,
    LAMBDA,
    LOG_FORMATS,
    MAX_LOOKBACK_S,
    OBJECT_TYPES,
    VARIABLES,
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
