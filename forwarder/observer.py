"""The hook a run reports its progress through (the CLI's progress line listens; nothing else must).

The defaults do nothing, so the Lambda and Splunk runtimes pay one no-op call per page and pass.
"""

from __future__ import annotations

from typing import Callable, Sequence

from .report import StreamReport
from .streams import Stream


class RunObserver:
    """Told how a run goes. Called from the run's threads while they work: an implementation must be
    quick, thread-safe, never raise, and never write to a slow device from these methods."""

    def started(self, plan: Sequence[Stream], api_calls: Callable[[], int]) -> None:
        """The run planned ``plan``; ``api_calls()`` is the number of API requests made so far."""

    def progressed(self, report: StreamReport, first_us: int, at_us: int) -> None:
        """``report``'s counters moved (a page read, a pass handed to the shared batches). The stream
        covers time from ``first_us`` to now and has handed over everything up to ``at_us``. Keep
        ``report`` and read it live: its counts of what the sink did arrive once the run's batches
        are settled (``shipped`` tells them as they happen)."""

    def shipped(self, stream: str, count: int) -> None:
        """The sink accepted ``count`` more records of ``stream`` (called from the run's sender threads,
        before the stream's report has them)."""

    def finished(self, report: StreamReport) -> None:
        """A stream ended; ``report.error`` says whether it failed (a batch of it that fails later
        joins the report once the run's batches are settled)."""


IGNORE = RunObserver()
