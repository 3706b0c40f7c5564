"""State stores, chosen by location: a directory path or ``file://``, ``s3://``, ``dynamodb://``,
``kvstore://`` (a Splunk KV store collection).

Each backend module is imported only when its location is used, so a build without boto3 (the
Splunk add-on) or without ``fcntl`` still opens the stores it has.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Callable, Dict, Optional

from .model import StreamState
from .store import Lease, Loaded, StateStore

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["Lease", "Loaded", "StateStore", "StreamState", "open_store", "open_store_for"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

# scheme -> "module:function"; the function takes the whole location string, the KV store its token
# too, and the stores that call AWS (_TIMED) the HTTP timeout.
_OPENERS: Dict[str, str] = {
    "file": "forwarder.state.local:open_local",
    "s3": "forwarder.state.s3:open_s3",
    "dynamodb": "forwarder.state.dynamodb:open_dynamodb",
    "kvstore": "forwarder.state.kvstore:open_kvstore",
}
_TIMED = frozenset({"s3", "dynamodb"})


def location_problem(location: str) -> Optional[str]:
    """What is wrong with ``location`` as a state location, checked without opening it; None if fine."""
    match = _SCHEME.match(location)
    scheme = match.group(1).lower() if match else "file"
    if scheme not in _OPENERS:
        return (
            f"unknown scheme {scheme!r} (use a directory path, file://, s3://bucket/prefix, "
            "dynamodb://table or kvstore://host:port/app/collection/scope)"
        )
    return None


def open_store(
    location: str, splunk_token: Optional[str] = None, timeout_seconds: float = 60.0
) -> StateStore:
    """Open the store at ``location``; ``splunk_token`` (FORWARDER_SPLUNK_TOKEN) is what a ``kvstore://``
    store authenticates with, ``timeout_seconds`` (FORWARDER_HTTP_TIMEOUT) bounds each call of an AWS
    store whole. Raises ValueError for an unusable or unavailable location."""
    problem = location_problem(location)
    if problem:
        raise ValueError(f"state location {location!r}: {problem}")
    match = _SCHEME.match(location)
    scheme = match.group(1).lower() if match else "file"
    target = _OPENERS[scheme]
    module_name, function = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"state location {location!r}: the {scheme} state store is not available in this build ({exc})"
        ) from None
    opener: Callable[..., StateStore] = getattr(module, function)
    if scheme == "kvstore":
        return opener(location, splunk_token)
    return opener(location, timeout_seconds) if scheme in _TIMED else opener(location)


def open_store_for(settings: Settings) -> StateStore:
    """``open_store`` of a run's settings: their state location, KV store token and HTTP timeout."""
    return open_store(settings.state, settings.splunk_token, settings.http_timeout_s)
