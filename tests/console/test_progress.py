"""Progress: streams, records, calls, the backfill estimate and the tenants line, drawn on its own thread."""

from __future__ import annotations

import io
import threading

from forwarder.console.progress import Progress, TenantsProgress
from forwarder.console.screen import Screen
from forwarder.report import StreamReport
from forwarder.timeutil import now_us


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
