"""State stores, chosen by location: a directory path or ``file://``, ``s3://``, ``dynamodb://``,
``kvstore://`` (a Splunk KV store collection).

Each backend module is imported only when its location is used, so a build without boto3 (the
Splunk add-on) or without ``fcntl`` still opens the stores it has.
"""

from __future__ import annotations

from typing import Callable, Optional, Protocol

from ..logs import quoted
from ..plugins import Registry
from ..urls import location_scheme
from .locations import location_problem
from .model import StreamState
from .store import Lease, Loaded, StateStore, StorePlace

__all__ = [
    "Lease",
    "Loaded",
    "StateStore",
    "StorePlace",
    "StoreSettings",
    "StreamState",
    "location_problem",
    "open_store",
    "open_store_for",
]

# scheme -> the module whose ``open_at(StorePlace)`` opens it; imported only when chosen.
STORES = Registry(
    "FORWARDER_STATE",
    "state store",
    {
        "file": "forwarder.state.local",
        "s3": "forwarder.state.s3",
        "dynamodb": "forwarder.state.dynamodb",
        "kvstore": "forwarder.state.kvstore",
    },
)


def open_store(
    location: str, splunk_token: Optional[str] = None, timeout_seconds: float = 60.0
) -> StateStore:
    """Open the store at ``location``; ``splunk_token`` (FORWARDER_SPLUNK_TOKEN) is what a ``kvstore://``
    store authenticates with, ``timeout_seconds`` (FORWARDER_HTTP_TIMEOUT) bounds each call of an AWS
    store whole. Raises ValueError for an unusable or unavailable location."""
    problem = location_problem(location)
    if problem:
        raise ValueError(f"state location {quoted(location)}: {problem}")
    module = STORES.load(location_scheme(location), f"state location {quoted(location)}")
    opener: Callable[[StorePlace], StateStore] = module.open_at
    return opener(StorePlace(location, splunk_token, timeout_seconds))


class StoreSettings(Protocol):
    """What ``open_store_for`` reads of a run's settings (``config.Settings`` has it): the state layer
    sits below the configuration, which checks state locations with ``location_problem``."""

    @property
    def state(self) -> str: ...

    @property
    def splunk_token(self) -> Optional[str]: ...

    @property
    def http_timeout_s(self) -> float: ...


def open_store_for(settings: StoreSettings) -> StateStore:
    """``open_store`` of a run's settings: their state location, KV store token and HTTP timeout."""
    return open_store(settings.state, settings.splunk_token, settings.http_timeout_s)
