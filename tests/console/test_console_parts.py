"""The console package's parts: colour decisions, tables, the status line, log lines, progress."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import threading

import pytest

from forwarder.app import run_once
from forwarder.console.logview import ConsoleHandler
from forwarder.console.progress import Progress, TenantsProgress
from forwarder.console.screen import Screen
from forwarder.console.style import Style, wants_colour
from forwarder.console.table import Painted, table
from forwarder.logs import register_secrets
from forwarder.observer import RunObserver
from forwarder.report import StreamReport
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import format_duration, now_us
from tests.console.terminal import ANSI
from tests.e2e.helpers import settings_for


@pytest.fixture
def tty():
    master, slave = os.openpty()
    with os.fdopen(slave, "w") as stream:
        yield stream
    os.close(master)


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"TERM": "xterm-256color"}, True),
        ({"TERM": "xterm", "NO_COLOR": "1"}, False),
        ({"TERM": "xterm", "NO_COLOR": ""}, False),  # set at all means no colour
        ({"TERM": "dumb"}, False),
        ({}, False),  # no TERM: nothing known about the terminal
    ],
)
def test_colour_only_on_a_capable_terminal_without_no_color(tty, env, expected):
    assert wants_colour(tty, env) is expected


def test_no_colour_off_a_terminal():
    assert wants_colour(io.StringIO(), {"TERM": "xterm"}) is False


def test_table_aligns_numbers_right_and_colour_does_not_move_columns():
    rows = [["alpha", 5, Painted("ok", ("green",))], ["b", 12345, Painted("FAIL", ("red", "bold"))]]
    plain = table(["name", "count", "state"], rows, Style(False))
    assert plain.splitlines() == ["name    count  state", "alpha       5  ok", "b      12,345  FAIL"]
    coloured = table(["name", "count", "state"], rows, Style(True))
    assert "\x1b[32mok" in coloured
    assert ANSI.sub("", coloured) == plain


def test_a_coloured_number_stays_right_aligned():
    rows = [[Painted("1", ("red",))], [250]]
    assert table(["failed"], rows, Style(False)).splitlines() == ["failed", "     1", "   250"]


def test_missing_values_show_as_a_dash_and_keep_a_numeric_column_right_aligned():
    assert table(["n"], [[None], [1000]], Style(False)).splitlines() == ["    n", "    -", "1,000"]


@pytest.mark.parametrize(
    "seconds, text", [(0.25, "0.2s"), (42, "42s"), (61, "1m 1s"), (3 * 3600 + 120, "3h 2m"), (90061, "1d 1h")]
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_the_status_line_is_redrawn_in_place_and_messages_go_above_it():
    out = io.StringIO()
    screen = Screen(out, live=True)
    screen.status("streams 1/3")
    screen.status("s 2")
    screen.message("warning: slow")
    screen.clear()
    wipe = "\r" + " " * 3 + "\r"
    assert out.getvalue() == "\rstreams 1/3" + "\rs 2" + " " * 8 + wipe + "warning: slow\n" + "\rs 2" + wipe


def test_no_status_line_off_a_terminal():
    out = io.StringIO()
    screen = Screen(out, live=False)
    screen.status("streams 1/3")
    screen.message("error: x")
    assert out.getvalue() == "error: x\n"


def test_log_lines_are_readable_with_their_fields_and_secrets_masked():
    register_secrets(["pa55word-for-console"])
    out = io.StringIO()
    handler = ConsoleHandler(Screen(out, live=False), Style(False))
    logger = logging.getLogger("tests.console.readable")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)  # whatever level an earlier test's Console left on the root logger
    try:
        logger.warning("api answered %s, retrying", 429, extra={"path": "/v1/cp/audits", "wait_s": 1.5})
        logger.error("sink refused", extra={"detail": "token pa55word-for-console is invalid", "empty": ""})
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("stream failed unexpectedly", extra={"stream": "user/a@b.example"})
    finally:
        logger.removeHandler(handler)
    assert out.getvalue().splitlines() == [
        "warning: api answered 429, retrying (path=/v1/cp/audits, wait_s=1.5)",
        "error: sink refused (detail=token *** is invalid)",
        "error: stream failed unexpectedly (stream=user/a@b.example): ValueError: boom",
    ]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_counts_streams_records_and_calls_and_estimates_a_backfill():
    clock = Clock()
    progress = Progress(Screen(io.StringIO(), live=False), clock=clock)
    assert progress.frame().startswith("planning: ")
    progress.started([object(), object()], lambda: 7)  # type: ignore[list-item]
    day, now = 86400 * 1_000_000, now_us()  # one reading: a pause between two would move "half way"
    done = StreamReport("user/a", fetched=300, shipped=250)
    progress.progressed(done, now - 10 * day, now - 10 * day)
    progress.finished(done)
    running = StreamReport("user/b", fetched=100, shipped=0)
    progress.progressed(running, now - 10 * day, now - 5 * day)  # half way (a hair less when drawn)
    clock.now += 30  # 1.5 of 2 streams covered in 30 s: 10 s to go
    assert (
        progress.frame() == "streams 1/2  fetched 400  shipped 250  13 records/s  API calls 7  ~10s left  30s"
    )
    assert progress.api_calls() == 7


def test_progress_shows_records_shipped_as_told_before_the_reports_have_them():
    progress = Progress(Screen(io.StringIO(), live=False), clock=Clock())
    progress.started([object()], lambda: 1)  # type: ignore[list-item]
    report = StreamReport("user/a", fetched=10)
    progress.progressed(report, now_us(), now_us())
    progress.shipped("user/a", 3)
    progress.shipped("user/a", 4)
    assert progress.counts().shipped == 7
    progress.finished(report)
    report.shipped = 7  # the run merged what the shipper did into the report: counted once
    assert progress.counts().shipped == 7


def test_no_estimate_when_every_stream_is_close_to_now():
    clock = Clock()
    progress = Progress(Screen(io.StringIO(), live=False), clock=clock)
    progress.started([object()], lambda: 1)  # type: ignore[list-item]
    progress.progressed(StreamReport("user/a", fetched=5), now_us() - 3600_000_000, now_us())
    clock.now += 5
    assert "left" not in progress.frame()


def test_the_tenants_line_adds_up_every_tenants_run():
    clock = Clock()
    tenants = TenantsProgress(Screen(io.StringIO(), live=False), 3, clock=clock)
    acme, globex = tenants.add("acme"), tenants.add("globex")
    acme.started([object(), object()], lambda: 5)  # type: ignore[list-item]
    done = StreamReport("user/a", fetched=300, shipped=250)
    acme.progressed(done, now_us(), now_us())
    acme.finished(done)
    clock.now += 10
    assert tenants.frame() == (
        "tenants 2/3 started, 1 planning  "
        "streams 1/2  fetched 300  shipped 250  30 records/s  API calls 5  10s"
    )
    globex.started([object()], lambda: 2)  # type: ignore[list-item]
    failed = StreamReport("user/b", fetched=20, error="refused")
    globex.finished(failed)
    assert tenants.frame() == (
        "tenants 2/3 started  streams 2/3  fetched 320  shipped 250  32 records/s  API calls 7  failed 1  10s"
    )


def test_progress_draws_on_its_own_thread_until_stopped():
    out = io.StringIO()
    progress = Progress(Screen(out, live=True), interval_s=0.01)
    progress.start()
    progress.started([object()], lambda: 0)  # type: ignore[list-item]
    progress.stop()
    assert out.getvalue().startswith("\rplanning: ") or out.getvalue().startswith("\rstreams 0/1")
    assert out.getvalue().endswith("\r")  # the line is wiped for the summary
    assert not [t for t in threading.enumerate() if t.name == "progress"]


class Recorder(RunObserver):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.planned = 0
        self.last = {}
        self.finished_streams = []

    def started(self, plan, api_calls):
        self.planned = len(plan)
        self.api_calls = api_calls

    def progressed(self, report, first_us, at_us):
        with self.lock:
            assert first_us <= at_us <= now_us()
            self.last[report.stream] = report  # read live: shipped counts arrive as batches are accepted

    def finished(self, report):
        with self.lock:
            self.finished_streams.append(report.stream)


def test_the_run_tells_its_observer_about_every_stream(tmp_path):
    with Simulator(generate_org(2)) as sim:
        settings = settings_for(sim.base_url, (tmp_path / "e.ndjson").as_uri(), str(tmp_path / "state"))
        recorder = Recorder()
        report = run_once(settings, observer=recorder)
        calls = recorder.api_calls()
        assert calls == len(sim.requests)
    assert report.ok and recorder.planned == len(report.streams)
    assert sorted(recorder.finished_streams) == sorted(s.stream for s in report.streams)
    seen = {name: (r.fetched, r.shipped) for name, r in recorder.last.items()}
    assert seen == {s.stream: (s.fetched, s.shipped) for s in report.streams}


@pytest.mark.parametrize("module", ["handlers.aws_lambda", "handlers.splunk_input"])
def test_the_lambda_and_splunk_runtimes_do_not_load_the_console(module):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith('forwarder.')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = eval(result.stdout)
    assert "forwarder.app" in loaded  # the import did load the forwarder
    assert not [m for m in loaded if m.startswith("forwarder.console")]
