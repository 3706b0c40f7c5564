"""A whole run into the file sink whose directory is removed between two batches: the batch fails, the
run says so, nothing is committed past what reached the file, and the next run delivers the rest once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import List, Sequence

from forwarder.app import run_once
from forwarder.cli.status import EXIT_OK, run_status
from forwarder.events import Event, SendResult
from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import Simulator
from forwarder.sinks import open_sink
from forwarder.timeutil import now_us, parse_iso
from tests.e2e.helpers import expected_ids, settings_for

ORG = generate_org(5)
LOOKBACK_US = 13 * 31 * 86400 * 1_000_000


class RemovesItsDirectory:
    """The real file sink; before its ``at``-th batch, the file's directory is removed (what the file
    held by then is kept in ``saved``, for the count)."""

    def __init__(self, sink, path: Path, at: int) -> None:
        self._sink = sink
        self._path = path
        self._at = at
        self.sent = 0
        self.saved: List[bytes] = []
        self.name, self.max_in_flight = sink.name, sink.max_in_flight
        self.max_batch_events, self.max_batch_bytes = sink.max_batch_events, sink.max_batch_bytes

    def send(self, batch: Sequence[Event]) -> SendResult:
        self.sent += 1
        if self.sent == self._at:
            self.saved = self._path.read_bytes().splitlines()
            shutil.rmtree(self._path.parent)
        return self._sink.send(batch)

    def close(self) -> None:
        self._sink.close()


def ids(lines: List[bytes]) -> List[str]:
    return [json.loads(line)["event"]["id"] for line in lines]


def test_a_removed_directory_fails_the_batch_and_the_next_run_delivers_the_rest_once(tmp_path):
    path = tmp_path / "out" / "events.ndjson"
    floor = now_us() - LOOKBACK_US
    expected = expected_ids(r for r in ORG.all_records() if parse_iso(r["created_at"]) >= floor)
    with Simulator(ORG) as sim:
        settings = settings_for(
            sim.base_url, path.as_uri(), str(tmp_path / "state"), FORWARDER_BATCH_EVENTS="10"
        )
        sink = RemovesItsDirectory(open_sink(settings.sink), path, at=3)
        try:
            first = run_once(settings, sink=sink)
        finally:
            sink.close()

        assert len(expected) > 40 and len(sink.saved) == 20  # two batches reached the file
        assert not first.ok and run_status(first) != EXIT_OK
        assert str(path) in json.dumps(first.to_dict())
        assert first.totals()["shipped"] == 20  # the report tells the truth

        second = run_once(settings)

    assert second.ok, second.to_dict()
    again = ids(path.read_bytes().splitlines())
    assert sorted(ids(sink.saved) + again) == expected  # every record once: nothing skipped or doubled
