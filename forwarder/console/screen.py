"""One terminal line that keeps being redrawn (the status) under lines that stay (messages)."""

from __future__ import annotations

import shutil
import threading
from typing import TextIO


class Screen:
    """Writes to a terminal stream from any thread. The status is redrawn in place with a carriage
    return and padding (no cursor codes, so even a dumb terminal shows it right); a message first
    wipes the status, then the status comes back under it."""

    def __init__(self, stream: TextIO, live: bool) -> None:
        self.stream = stream
        self.live = live  # False: not a terminal, so no status line at all
        self._status = ""
        self._shown = 0  # characters of status currently on the screen
        # Stream threads print messages while the ticker redraws the status: a redraw must never
        # land between a message's wipe and its text.
        self._lock = threading.Lock()

    def width(self) -> int:
        return max(20, shutil.get_terminal_size((100, 24)).columns - 1)

    def status(self, text: str) -> None:
        if not self.live:
            return
        with self._lock:
            self._status = text[: self.width()]
            self._draw()

    def message(self, text: str) -> None:
        """Print ``text`` (one or more lines) above the status line."""
        with self._lock:
            self._wipe()
            self.stream.write(text if text.endswith("\n") else text + "\n")
            self._draw()

    def clear(self) -> None:
        """Remove the status line for good (the run is over)."""
        with self._lock:
            self._wipe()
            self._status = ""
            self.stream.flush()

    def _wipe(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self._shown = 0

    def _draw(self) -> None:
        if self.live and self._status:
            pad = max(0, self._shown - len(self._status))  # blank what a longer frame left
            self.stream.write("\r" + self._status + " " * pad)
            self._shown = len(self._status)
        self.stream.flush()
