"""The fan-out functions' own settings (Lambda environment, set by template.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..config import read_all
from .queue import WorkQueue


@dataclass(frozen=True)
class FanoutSettings:
    queue_url: str  # FORWARDER_QUEUE_URL: the FIFO work queue
    shard_size: int  # FORWARDER_SHARD_SIZE: streams per work item
    max_age_s: int  # FORWARDER_CYCLE_MAX_AGE: an unfinished cycle older than this no longer blocks
    http_timeout_s: float  # FORWARDER_HTTP_TIMEOUT: bounds each call to the queue

    def queue(self) -> WorkQueue:
        """The work queue, every call to it bounded by the HTTP timeout."""
        return WorkQueue(self.queue_url, timeout_seconds=self.http_timeout_s)


def load_fanout_settings(env: Mapping[str, str]) -> FanoutSettings:
    """The fan-out variables, parsed as the configuration table says; ConfigError lists every problem."""
    names = (
        "FORWARDER_QUEUE_URL",
        "FORWARDER_SHARD_SIZE",
        "FORWARDER_CYCLE_MAX_AGE",
        "FORWARDER_HTTP_TIMEOUT",
    )
    return FanoutSettings(*read_all(env, names).values())
