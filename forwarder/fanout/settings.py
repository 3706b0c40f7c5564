"""The fan-out functions' own settings (Lambda environment, set by template.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Mapping

from ..errors import ConfigError
from ..timeutil import parse_duration

DEFAULT_SHARD_SIZE = 200
DEFAULT_MAX_AGE = "1h"


@dataclass(frozen=True)
class FanoutSettings:
    queue_url: str  # FORWARDER_QUEUE_URL: the FIFO work queue
    shard_size: int  # FORWARDER_SHARD_SIZE: streams per work item
    max_age_s: int  # FORWARDER_CYCLE_MAX_AGE: an unfinished cycle older than this no longer blocks


def load_fanout_settings(env: Mapping[str, str]) -> FanoutSettings:
    problems: List[str] = []
    url = (env.get("FORWARDER_QUEUE_URL") or "").strip()
    if not url:
        problems.append("FORWARDER_QUEUE_URL: required in fan-out mode (the work queue's URL)")
    elif not url.rstrip("/").endswith(".fifo"):
        problems.append(f"FORWARDER_QUEUE_URL: expected an SQS FIFO queue (.fifo), got {url!r}")
    size_text = (env.get("FORWARDER_SHARD_SIZE") or "").strip() or str(DEFAULT_SHARD_SIZE)
    size = int(size_text) if size_text.isdigit() else 0
    if not 1 <= size <= 5000:
        problems.append(f"FORWARDER_SHARD_SIZE: must be between 1 and 5000, got {size_text!r}")
    try:
        max_age_s = parse_duration((env.get("FORWARDER_CYCLE_MAX_AGE") or "").strip() or DEFAULT_MAX_AGE)
    except ValueError as exc:
        problems.append(f"FORWARDER_CYCLE_MAX_AGE: {exc}")
        max_age_s = 0
    if problems:
        raise ConfigError(problems)
    return FanoutSettings(url, size, max_age_s)
