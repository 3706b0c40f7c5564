"""How the CLI talks to the person (or the pipe) on stderr: JSON lines, or readable lines with a
live progress line and a summary table."""

from __future__ import annotations

import logging
import time
from typing import Dict, Mapping, Optional, TextIO

from ..logs import configure
from ..report import RunReport
from ..timeutil import format_duration, parse_iso
from .logview import ConsoleHandler
from .progress import Progress, TenantsProgress
from .screen import Screen
from .style import Style, is_terminal, wants_colour
from .views import run_summary, tenants_total


def wants_text(log_format: str, stream: TextIO) -> bool:
    """FORWARDER_LOG_FORMAT: ``text`` always, ``json`` never, ``auto`` when ``stream`` is a terminal."""
    return log_format == "text" or (log_format == "auto" and is_terminal(stream))


class Console:
    """Sets up logging for one command and, in text mode, shows each run's progress and summary.

    In JSON mode the output is exactly the JSON log lines, as cron, containers and log shippers expect.
    ``quiet`` keeps errors only: the exit code says the rest.
    """

    def __init__(
        self,
        log_format: str,
        log_level: str,
        env: Mapping[str, str],
        stream: TextIO,
        quiet: bool = False,
        shares_terminal: bool = False,
    ) -> None:
        """``shares_terminal``: events are written to the same terminal (the stdout sink), where a
        live line would run into them; the summary still comes at the end."""
        self.text = wants_text(log_format, stream)
        self.quiet = quiet
        self.style = Style(self.text and wants_colour(stream, env))
        live = self.text and is_terminal(stream) and not quiet and not shares_terminal
        self.screen = Screen(stream, live=live)
        self._progress: Optional[Progress] = None
        self._tenants: Optional[TenantsProgress] = None
        level = logging.getLevelName(log_level.upper())
        if not isinstance(level, int):  # load_settings refuses these; `state` and `demo` read env only
            level = logging.INFO
        if quiet:
            level = logging.ERROR
        elif self.text and level != logging.DEBUG:
            level = max(level, logging.WARNING)  # the progress line and summary replace INFO lines
        if self.text:
            configure(logging.getLevelName(level), handler=ConsoleHandler(self.screen, self.style))
        else:
            configure(logging.getLevelName(level), stream)

    def progress(self) -> Progress:
        """A fresh observer for one run; it draws only on a terminal, in text mode, when not quiet."""
        self._progress = Progress(self.screen)
        if self.screen.live:
            self._progress.start()
        return self._progress

    def summary(self, report: RunReport) -> None:
        """End the run's progress line and, in text mode, print the summary table."""
        progress = self._progress
        self.close()
        if not self.text or self.quiet or progress is None:
            return
        elapsed, calls = progress.elapsed(), progress.api_calls()
        self.screen.message(run_summary(report, self.style, elapsed_s=elapsed, api_calls=calls))

    def tenants_started(self, count: int) -> None:
        """Tenants run side by side: one live line adds up their numbers (``tenant_progress``)."""
        self.close()
        self._tenants = TenantsProgress(self.screen, count)
        if self.screen.live:
            self._tenants.start()

    def tenant_progress(self, name: str) -> Progress:
        """A fresh observer for tenant ``name``'s run (from its thread): it counts, it never draws."""
        assert self._tenants is not None, "tenants_started comes first"
        return self._tenants.add(name)

    def tenants_summary(self, reports: Dict[str, RunReport]) -> None:
        """End the live line and, in text mode, print each tenant's summary (as a single
        organization's), then one row per tenant and their total."""
        tenants = self._tenants
        self.close()
        if not self.text or self.quiet or tenants is None:
            return
        blocks = []
        calls = [c for c in (p.api_calls() for p in tenants.tenants.values()) if c is not None]
        for name, report in reports.items():
            progress = tenants.tenants.get(name)  # none when the tenant failed before its run began
            took = (parse_iso(report.finished) - parse_iso(report.started)) / 1e6
            blocks.append(
                run_summary(
                    report,
                    self.style,
                    elapsed_s=took,
                    api_calls=progress.api_calls() if progress else None,
                    tenant=name,
                )
            )
        elapsed = tenants.elapsed()
        blocks.append(tenants_total(reports, self.style, elapsed_s=elapsed, api_calls=sum(calls)))
        self.screen.message("".join(blocks))

    def waiting(self, seconds: float, every: float) -> None:
        """Between runs of `run --interval`: say when the next one starts (in ``seconds``)."""
        at = time.strftime("%H:%M:%S", time.localtime(time.time() + seconds))
        self.screen.status(f"next run at {at} (every {format_duration(every)}; Ctrl-C or SIGTERM stops)")

    def close(self) -> None:
        """Take the progress or waiting line away (also when a run ended by an exception or Ctrl-C)."""
        for live in (self._progress, self._tenants):
            if live is not None:
                live.stop()
        self._progress = self._tenants = None
        self.screen.clear()
