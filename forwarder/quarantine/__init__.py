"""Where events a sink refused for good are kept, with the reason, so nothing is silently dropped.

``FORWARDER_QUARANTINE`` is a directory or ``file://`` path (CLI, containers: ``local``) or
``s3://bucket/prefix`` (Lambda, whose disk does not outlive the invocation: ``s3``), chosen by
:func:`open_quarantine`. Both keep the lines of ``entries``. ``entries`` and ``remove`` serve
``audit-forwarder quarantine list / replay`` (forwarder/replay.py).

The S3 module is imported only when an S3 location is used: the Splunk add-on ships without boto3,
and a run that quarantines locally never loads it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Protocol, Sequence, Set

from ..events import Rejection
from ..logs import quoted
from ..plugins import Registry
from ..urls import local_path, location_scheme, parse_s3_uri
from .entries import Entry, quarantine_lines, unplaceable
from .local import LocalQuarantine
from .place import QuarantinePlace

__all__ = [
    "Entry",
    "LocalQuarantine",
    "Quarantine",
    "QuarantinePlace",
    "S3Quarantine",
    "location_problem",
    "open_quarantine",
    "quarantine_lines",
    "unplaceable",
]

# scheme -> the module whose ``open_at(QuarantinePlace)`` opens it; imported only when chosen.
QUARANTINES = Registry(
    "FORWARDER_QUARANTINE",
    "quarantine",
    {"file": "forwarder.quarantine.local", "s3": "forwarder.quarantine.s3"},
)


class Quarantine(Protocol):
    location: str

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None: ...

    def entries(self) -> Iterator[Entry]: ...

    def remove(self, where: str, event_ids: Set[str]) -> None:
        """Drop the entries of ``where`` with these ids (replayed: the sink proved acceptance)."""
        ...


def location_problem(location: str) -> Optional[str]:
    """What is wrong with ``location`` as a quarantine location, checked without opening it."""
    scheme = location_scheme(location)
    try:
        if scheme == "s3":
            parse_s3_uri(location, "the quarantine location")
        elif scheme == "file":
            local_path(location)
        else:
            return f"unknown scheme {quoted(scheme)} (use a directory, file:///path or s3://bucket/prefix)"
    except ValueError as exc:
        return str(exc)
    return None


def open_quarantine(
    location: str, kms_key_id: Optional[str] = None, timeout_seconds: float = 60.0
) -> Quarantine:
    """The quarantine at ``location``; ``timeout_seconds`` (FORWARDER_HTTP_TIMEOUT) bounds each call
    to a remote one. ValueError for a location it cannot open."""
    problem = location_problem(location)
    if problem:
        raise ValueError(f"FORWARDER_QUARANTINE: {problem}")
    opener: Callable[[QuarantinePlace], Quarantine] = QUARANTINES.load(location_scheme(location)).open_at
    return opener(QuarantinePlace(location, kms_key_id, timeout_seconds))


def __getattr__(name: str) -> Any:
    """``S3Quarantine``, imported on first use (boto3 with it)."""
    if name == "S3Quarantine":
        return QUARANTINES.load("s3").S3Quarantine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
