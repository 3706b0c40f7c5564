"""A record that cannot be placed in time is quarantined once: its quarantine id joins the stream's
state once written, so the next run (or pass) skips it, and a pass read again (ReadAgain) neither
quarantines it again nor counts what it read twice. Before, every run quarantined it again (exit 3
every run) and a pass read again quarantined and counted it twice."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Sequence

import pytest

from forwarder.api.trail import TrailReader
from forwarder.errors import SinkError
from forwarder.events import Rejection
from forwarder.normalize import NormalizeOptions
from forwarder.pipeline import RunContext, run_stream, run_streams
from forwarder.quarantine import LocalQuarantine, unplaceable_id
from forwarder.records import event_id
from forwarder.report import RunReport, StreamReport
from forwarder.selection import Limits
from forwarder.streams import Ownership
from forwarder.timeutil import now_us
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import STREAM, formatter, make_records
from tests.pipeline.test_strategy_property import FakeService, Scripted

LIMITS = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=100)


def trail_with_a_bad_record(count: int, created_at: str) -> List[Dict[str, Any]]:
    good = make_records(list(range(count)), now_us() - 3600 * 1_000_000)
    return [{**good[0], "created_at": created_at, "changes": {"n": "bad"}}, *good]


class FailingOnce(LocalQuarantine):
    """A quarantine whose first write fails, as a full disk or a refused S3 PUT would."""

    def __init__(self, directory: str) -> None:
        super().__init__(directory)
        self.failed = False

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None:
        if not self.failed:
            self.failed = True
            raise SinkError("quarantine write refused on purpose")
        super().keep(stream_key, rejections)


def one_run(api: FakeService, store: MemoryStore, quarantine: LocalQuarantine, shared: bool) -> StreamReport:
    """One run of the stream; ``shared``: through run_streams (the run's shared batches), as the app runs."""
    ctx = RunContext(
        source=TrailReader(api, 10, max_pages=10_000),  # type: ignore[arg-type]
        store=store,
        sink=MemorySink(max_batch_events=7),
        formatter=formatter,
        quarantine=quarantine,
        limits=LIMITS,
        ownership=Ownership([STREAM], time.time()),
        options=NormalizeOptions(ingest_time_us=0),
        linger_s=0.0,
    )
    if not shared:
        return run_stream(ctx, STREAM)
    report = RunReport(started="now")
    run_streams(ctx, [STREAM], 1, report)
    return report.streams[0]


@pytest.mark.parametrize("shared", [False, True], ids=["run_stream", "run_streams"])
@pytest.mark.parametrize("good", [25, 0], ids=["with-records", "alone"])
def test_a_bad_record_is_quarantined_by_the_first_run_only(tmp_path, shared, good):
    api = FakeService("asc", True, True)
    api.records = trail_with_a_bad_record(max(good, 1), "9999-bad")[: good + 1]
    store, quarantine = MemoryStore(), LocalQuarantine(str(tmp_path))
    reports = [one_run(api, store, quarantine, shared) for _ in range(3)]
    assert all(r.ok for r in reports), [r.error for r in reports]
    assert [r.quarantined for r in reports] == [1, 0, 0]  # later runs are clean: exit code 0
    assert [r.invalid for r in reports] == [1, 0, 0] and reports[1].skipped >= 1
    (entry,) = quarantine.entries()
    state = store.load(STREAM.key).state
    assert entry.event_id in state.seen and state.delivered_total == good  # remembered, not delivered


def test_a_failed_quarantine_write_is_not_remembered(tmp_path):
    """The state moves only over what was kept: the next run quarantines the record again."""
    api = FakeService("asc", True, True)
    api.records = trail_with_a_bad_record(1, "9999-bad")[:1]
    store, quarantine = MemoryStore(), FailingOnce(str(tmp_path))
    failed = one_run(api, store, quarantine, shared=True)
    assert failed.error is not None and "quarantine write refused" in failed.error
    assert unplaceable_id(api.records[0]) not in store.load(STREAM.key).state.seen
    again = one_run(api, store, quarantine, shared=True)
    assert again.ok and again.quarantined == 1 and len(list(quarantine.entries())) == 1


def test_a_pass_read_again_after_it_quarantined_counts_and_quarantines_once(tmp_path):
    """The pages asked oldest-first come out of order on the third page: the pass is read again
    another way (ReadAgain), after it had quarantined the bad record and counted 26 fetched."""
    records = trail_with_a_bad_record(25, "0000-bad")
    order = [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 24, 3, 22, 23, 21, 25]
    api = Scripted(records, list(range(26)), list(range(26)), order)
    api.time_bounds = False
    quarantine = LocalQuarantine(str(tmp_path))
    report = one_run(api, MemoryStore(), quarantine, shared=False)
    assert report.ok, report.error
    assert report.strategy == "full-scan"  # it was read again
    assert report.quarantined == 1 and report.invalid == 1 and report.fetched == len(records)
    assert report.new == report.shipped == 25
    assert len(list(quarantine.entries())) == 1


def test_a_pass_read_again_in_the_same_pass_meets_the_record_it_quarantined(tmp_path):
    """A service that ignores offset: the first page is read again unpaged, in the same pass, with
    the bad record on it. It is neither quarantined nor counted a second time."""
    api = FakeService("asc", False, "limit")
    api.records = trail_with_a_bad_record(25, "0000-bad")
    quarantine = LocalQuarantine(str(tmp_path))
    store = MemoryStore()
    report = one_run(api, store, quarantine, shared=False)
    assert report.ok, report.error
    assert report.quarantined == 1 and report.invalid == 1 and report.skipped == 0
    assert report.fetched == len(api.records) and report.shipped == 25
    assert len(list(quarantine.entries())) == 1
    assert store.load(STREAM.key).state.delivered_total == 25
    assert sorted(store.load(STREAM.key).state.seen) == sorted(
        [unplaceable_id(api.records[0])] + [event_id(r) for r in api.records[1:]]
    )
