"""Record -> event, as pure functions. A registry maps FORWARDER_FORMAT to the formatter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict

from ..events import Event
from ..records import AuditRecord

ECS_VERSION = "9.4.0"
OCSF_VERSION = "1.8.0"


@dataclass(frozen=True)
class NormalizeOptions:
    """Everything a formatter may depend on besides the record: no clock, no I/O."""

    # When the forwarder read the record (event.created). Not compared: each pass of a run stamps its
    # own, and options that differ only in it shape events alike, so what a formatter caches for one
    # options value (templates, lines: the ingest time is a value filled in) serves the next pass.
    ingest_time_us: int = field(compare=False)
    vendor: str = "Fortra"
    product: str = "EmailAuth Platform"
    product_version: str = "v1"
    include_original: bool = True  # event.original in ECS


Formatter = Callable[[AuditRecord, NormalizeOptions], Event]

# Formatters build their Event with every field by ``new_tuple(Event, (...))``: the named tuple's own
# __new__ is a Python function, a tenth of what a change-less record costs to normalize.
new_tuple = tuple.__new__

_REGISTRY: Dict[str, str] = {
    "ecs": "forwarder.normalize.ecs:format_ecs",
    "raw": "forwarder.normalize.raw:format_raw",
    "cef": "forwarder.normalize.cef:format_cef",
    "ocsf": "forwarder.normalize.ocsf:format_ocsf",
    "udm": "forwarder.normalize.udm:format_udm",
}


def formats() -> list[str]:
    return sorted(_REGISTRY)


def get_formatter(name: str) -> Formatter:
    """Look a format up by name; the module is imported only when chosen."""
    import importlib

    try:
        target = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown format {name!r} (choose from {', '.join(formats())})") from None
    module, attr = target.split(":")
    formatter: Formatter = getattr(importlib.import_module(module), attr)
    return formatter
