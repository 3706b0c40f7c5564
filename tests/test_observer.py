"""The run tells its observer about every stream."""

from __future__ import annotations

import threading

from forwarder.app import run_once
from forwarder.observer import RunObserver
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import settings_for


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
