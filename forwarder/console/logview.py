"""Log records as lines a person reads: 'warning: api GET /v1/cp/audits failed, retrying (wait_s=1.5)'."""

from __future__ import annotations

import logging

from ..logs import redact
from .screen import Screen
from .style import Style

# Attributes every LogRecord has; whatever else a record carries came in through ``extra``.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class ConsoleHandler(logging.Handler):
    """Writes each record as one readable line above the progress line, secrets masked."""

    def __init__(self, screen: Screen, style: Style) -> None:
        super().__init__()
        self.screen = screen
        self.style = style

    def format(self, record: logging.LogRecord) -> str:
        fields = {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}
        detail = ", ".join(f"{k}={v}" for k, v in fields.items() if v is not None and v != "")
        text = record.getMessage() + (f" ({detail})" if detail else "")
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f": {type(exc).__name__}: {exc}"
        level = record.levelname.lower()
        if record.levelno >= logging.ERROR:
            level = self.style.bad(level)
        elif record.levelno >= logging.WARNING:
            level = self.style.warn(level)
        return redact(f"{level}: {text}")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.screen.message(self.format(record))
        except Exception:  # a log line must never stop the run
            self.handleError(record)
