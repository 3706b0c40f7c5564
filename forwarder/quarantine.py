"""Where events a sink refused for good are kept, with the reason, so nothing is silently dropped."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol, Sequence

from . import jsonutil
from .events import Rejection
from .timeutil import format_us, now_us


class Quarantine(Protocol):
    location: str

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None: ...


class LocalQuarantine:
    """Appends one JSON line per rejected event to ``<directory>/quarantine.ndjson``, fsynced."""

    def __init__(self, directory: str) -> None:
        self.location = str(Path(directory) / "quarantine.ndjson")
        self._lock = threading.Lock()

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None:
        if not rejections:
            return
        lines = [
            jsonutil.dumps(
                {
                    "quarantined_at": format_us(now_us()),
                    "stream": stream_key,
                    "event_id": r.event.id,
                    "reason": r.reason,
                    "event": r.event.body.decode("utf-8", "replace"),
                }
            )
            + b"\n"
            for r in rejections
        ]
        with self._lock:
            Path(self.location).parent.mkdir(parents=True, exist_ok=True)
            with open(self.location, "ab") as fh:
                fh.writelines(lines)
                fh.flush()
                os.fsync(fh.fileno())
