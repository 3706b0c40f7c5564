"""The stdout sink: one NDJSON line per event, flushed after every batch."""

from __future__ import annotations

import contextlib
import sys
from typing import BinaryIO, Optional, Sequence

from ..errors import SinkError
from ..events import Event, SendResult
from ..retry import RetryPolicy
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, ndjson
from .settings import SinkSettings


class StdoutSink:
    """Writes to ``stream`` (default: ``sys.stdout.buffer``, looked up at each send)."""

    name = "stdout"

    def __init__(
        self,
        stream: Optional[BinaryIO] = None,
        max_batch_events: int = DEFAULT_MAX_EVENTS,
        max_batch_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self._stream = stream
        self.max_batch_events = max_batch_events
        self.max_batch_bytes = max_batch_bytes
        self.max_in_flight = 1  # one stream, written in order

    def _out(self) -> BinaryIO:
        # Late lookup: a redirected sys.stdout (a test's capture, a wrapper) is honoured.
        return self._stream if self._stream is not None else sys.stdout.buffer

    def send(self, batch: Sequence[Event]) -> SendResult:
        out = self._out()
        try:
            out.write(ndjson(batch))
            out.flush()
        except OSError as exc:  # a closed pipe (the reader went away), a full disk behind a redirect
            raise SinkError(f"could not write to stdout: {exc.strerror or exc}") from exc
        return SendResult.all_delivered(len(batch))

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # already closed by the reader or the interpreter
            self._out().flush()

    def __repr__(self) -> str:
        return "StdoutSink()"


def probe(settings: SinkSettings, retry_policy: Optional[RetryPolicy] = None) -> str:
    return "standard output: nothing to reach"


def open_sink(settings: SinkSettings, retry_policy: Optional[RetryPolicy] = None) -> StdoutSink:
    """Writes to standard output: ``retry_policy`` has nothing to pace here."""
    return StdoutSink(
        max_batch_events=settings.batch_events or DEFAULT_MAX_EVENTS,
        max_batch_bytes=settings.batch_bytes or DEFAULT_MAX_BYTES,
    )
