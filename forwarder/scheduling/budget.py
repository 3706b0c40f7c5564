"""When a run stops starting streams: a stop request, the caller's deadline, or its budget spent.

The budget counts every API request of the run (the token and the users list too: they cost the
same rate) and the time since the run began. Streams in flight finish their pass; the streams not
started are left to the next run, which the schedule starts with them (they are the oldest polled).
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from .. import stop


class Stops:
    """The run's one stop test; ``reason`` keeps why it first said stop."""

    def __init__(
        self,
        deadline: Callable[[], bool],
        calls: Optional[int],
        time_s: Optional[float],
        spent: Callable[[], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._deadline = deadline
        self._calls = calls
        self._time_s = time_s
        self._spent = spent
        self._clock = clock
        self._began = clock()
        self.reason: Optional[str] = None

    def __call__(self) -> bool:
        if self.reason is None:
            self.reason = self._why()
        return self.reason is not None

    def _why(self) -> Optional[str]:
        if stop.requested():
            return "stop requested"
        if self._deadline():
            return "deadline"
        if self._calls is not None and self._spent() >= self._calls:
            return f"budget: {self._calls} API calls spent (FORWARDER_RUN_BUDGET_CALLS)"
        if self._time_s is not None and self._clock() - self._began >= self._time_s:
            return f"budget: {self._time_s:g}s spent (FORWARDER_RUN_BUDGET_TIME)"
        return None
