"""What a run did, per stream and in total: the summary printed, logged and returned by handlers."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple


@dataclass
class StreamReport:
    stream: str
    fetched: int = 0  # records the API returned (every pass, duplicates included)
    new: int = 0  # records selected for shipping
    shipped: int = 0  # accepted by the sink
    quarantined: int = 0  # refused by the sink for good, kept in quarantine
    skipped: int = 0  # already delivered, before the first-run window, or owned by another stream
    invalid: int = 0  # records that cannot be placed (no usable created_at...): quarantined raw
    future: int = 0  # records dated past the clock: shipped once, the watermark not moved by them
    late: int = 0  # new records older than the watermark: they reached the API late
    passes: int = 0
    api_calls: int = 0  # audits requests, every pass
    # How the trail was read: ascending+start_date, offset, time-windows or full-scan (the service
    # honours neither order nor time bounds: every pass read the whole trail).
    strategy: str = ""
    truncated: bool = False  # the page cap or an offset ceiling stopped a pass early
    stopped: bool = False  # abandoned on a stop request (SIGTERM) after its last committed batch
    unfinished: bool = False  # records were left to read (the run's budget, a deadline): read next run
    watermark: Optional[str] = None
    lag_seconds: Optional[float] = None  # now minus the newest delivered record's time
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> Dict[str, Any]:
        # What dataclasses.asdict gives, without its deep copy of every field: each is a scalar.
        # A tenth of the cost, paid for every stream of every run (and every log line of one).
        return {name: getattr(self, name) for name in _STREAM_FIELDS}


_STREAM_FIELDS = tuple(f.name for f in fields(StreamReport))


@dataclass
class RunReport:
    started: str
    finished: str = ""
    streams: List[StreamReport] = field(default_factory=list)
    not_started: List[str] = field(default_factory=list)  # left for the next run (deadline, budget)
    not_due: List[str] = field(default_factory=list)  # skipped: the schedule does not need them yet
    stop_reason: Optional[str] = None  # why the run stopped starting streams (budget, deadline...)
    error: Optional[str] = None  # a failure before any stream ran (users endpoint, sink set-up)
    skip_reason: Optional[str] = None  # why the run did nothing at all (another run holds the lease)

    @property
    def ok(self) -> bool:
        return self.error is None and all(s.ok for s in self.streams)

    def failures(self) -> List[Tuple[str, List[str]]]:
        """(error, the streams that failed with it) per distinct error, in the order first met."""
        grouped: Dict[str, List[str]] = {}
        for stream in self.streams:
            if stream.error:
                grouped.setdefault(stream.error, []).append(stream.stream)
        return list(grouped.items())

    def failure_lines(self) -> List[str]:
        """``<stream>: <error>``, or ``25 streams (<first>, ...): <error>``, once per distinct error."""
        return [f"{which_streams(keys)}: {error}" for error, keys in self.failures()]

    def totals(self) -> Dict[str, Any]:
        keys = ("fetched", "new", "shipped", "quarantined", "skipped", "invalid", "future", "late")
        totals: Dict[str, Any] = {k: sum(getattr(s, k) for s in self.streams) for k in keys}
        totals["streams"] = len(self.streams)
        totals["failed_streams"] = sum(1 for s in self.streams if not s.ok)
        totals["api_calls"] = sum(s.api_calls for s in self.streams)
        # Streams the service made read whole on every pass (it honours neither order nor time bounds).
        totals["full_scan_streams"] = sum(1 for s in self.streams if s.strategy == "full-scan")
        lags = [s.lag_seconds for s in self.streams if s.lag_seconds is not None]
        totals["max_lag_seconds"] = max(lags) if lags else None
        return totals

    def to_dict(self) -> Dict[str, Any]:
        return {
            "ok": self.ok,
            "started": self.started,
            "finished": self.finished,
            "totals": self.totals(),
            "error": self.error,
            "skipped": self.skip_reason,
            "not_started": self.not_started,
            "failures": [{"error": e, "streams": len(keys), "first": keys[0]} for e, keys in self.failures()],
            "not_due": self.not_due,
            "stop_reason": self.stop_reason,
            "streams": [s.to_dict() for s in self.streams],
        }


def which_streams(keys: List[str]) -> str:
    """The stream that failed, or how many failed alike and the first of them."""
    return keys[0] if len(keys) == 1 else f"{len(keys):,} streams ({keys[0]}, ...)"
