"""A record that cannot be placed in time is quarantined once. Its quarantine id joins the stream's
state through the stream's next commit (or the stream's last commit of the run, when nothing else of
it waits), never before the quarantine write is durable; later passes and runs skip it, and a pass
read again (ReadAgain) neither quarantines it again nor counts what it read twice. Before, every run
quarantined it again (one more entry, exit code 3, every run) and a pass read again did it twice."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import pytest

from forwarder.delivery.claims import Claims
from forwarder.errors import SinkError
from forwarder.events import Rejection
from forwarder.normalize import NormalizeOptions
from forwarder.pipeline import RunContext, run_stream, run_streams
from forwarder.quarantine import LocalQuarantine, unplaceable
from forwarder.reading.select import Limits
from forwarder.reading.trail import TrailReader
from forwarder.records import event_id
from forwarder.report import RunReport, StreamReport
from forwarder.state.model import StreamState
from forwarder.timeutil import now_us
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import STREAM, formatter, make_records
from tests.pipeline.test_strategy_property import FakeService, Scripted

# Each run reads the whole trail again (a tie margin as long as the look-back): every record a later
# run reads, the bad one included, is skipped.
LIMITS = Limits(initial_lookback_s=86400, window_s=7200, max_records_per_pass=100, tie_margin_s=7200)


def quarantine_id(raw: Any) -> str:
    return unplaceable(raw, "").event.id


def trail_with_a_bad_record(count: int, created_at: str) -> List[Dict[str, Any]]:
    """A bad record (``created_at`` unusable) followed by ``count`` good ones an hour old."""
    good = make_records(list(range(max(count, 1))), now_us() - 3600 * 1_000_000)
    return [{**good[0], "created_at": created_at, "changes": {"n": "bad"}}, *good[:count]]


class CheckedStore(MemoryStore):
    """Every state it commits holds only quarantine ids whose entry is already in ``quarantine``."""

    def __init__(self, quarantine: LocalQuarantine, bad_ids: Sequence[str]) -> None:
        super().__init__()
        self.quarantine, self.bad_ids = quarantine, set(bad_ids)
        self.commits = 0

    def commit(self, key: str, state: StreamState, version: Optional[str]) -> str:
        kept = {entry.event_id for entry in self.quarantine.entries()}
        assert set(state.seen) & self.bad_ids <= kept, "a state moved past a record not yet in quarantine"
        self.commits += 1
        return super().commit(key, state, version)


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


def one_run(
    api: FakeService, store: MemoryStore, quarantine: LocalQuarantine, shared: bool, linger_s: float = 0.0
) -> StreamReport:
    """One run of the stream; ``shared``: through run_streams (the run's shared batches), as the app runs."""
    ctx = RunContext(
        source=TrailReader(api, 10, max_pages=10_000),  # type: ignore[arg-type]
        store=store,
        sink=MemorySink(max_batch_events=7),
        formatter=lambda: formatter,
        quarantine=quarantine,
        limits=LIMITS,
        claims=Claims.load(store, LIMITS.window_s, LIMITS.tie_margin_s),
        options=NormalizeOptions(ingest_time_us=0),
        linger_s=linger_s,
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
    api.records = trail_with_a_bad_record(good, "9999-bad")
    quarantine = LocalQuarantine(str(tmp_path))
    store = CheckedStore(quarantine, [quarantine_id(api.records[0])])
    reports = [one_run(api, store, quarantine, shared)]
    commits = store.commits
    reports += [one_run(api, store, quarantine, shared) for _ in range(2)]
    assert all(r.ok for r in reports), [r.error for r in reports]
    assert [r.quarantined for r in reports] == [1, 0, 0]  # later runs are clean: exit code 0
    assert [r.invalid for r in reports] == [1, 0, 0] and [r.skipped for r in reports][1:] == [good + 1] * 2
    (entry,) = quarantine.entries()
    state = store.load(STREAM.key).state
    assert entry.event_id in state.seen and state.delivered_total == good  # remembered, not delivered
    assert commits == max(1, -(-good // 7))  # carried by the records' commits, or one of its own
    assert store.commits == commits  # the later runs wrote nothing


def test_a_failed_quarantine_write_is_not_remembered(tmp_path):
    """The state moves only over what was kept: the next run quarantines the record again."""
    api = FakeService("asc", True, True)
    api.records = trail_with_a_bad_record(0, "9999-bad")
    store, quarantine = MemoryStore(), FailingOnce(str(tmp_path))
    failed = one_run(api, store, quarantine, shared=True)
    assert failed.error is not None and "quarantine write refused" in failed.error
    assert store.load(STREAM.key).version is None  # nothing written
    again = one_run(api, store, quarantine, shared=True)
    assert again.ok and again.quarantined == 1 and len(list(quarantine.entries())) == 1
    assert quarantine_id(api.records[0]) in store.load(STREAM.key).state.seen


def test_a_pass_read_again_after_it_quarantined_counts_and_quarantines_once(tmp_path):
    """The pages asked oldest-first come out of order on the third page: the pass is read again
    another way (ReadAgain), after it had quarantined the bad record and counted what it read."""
    records = trail_with_a_bad_record(25, "0000-bad")
    order = [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 24, 3, 22, 23, 21, 25]
    api = Scripted(records, list(range(26)), list(range(26)), order)
    api.time_bounds = False
    quarantine = LocalQuarantine(str(tmp_path))
    report = one_run(api, MemoryStore(), quarantine, shared=False)
    assert report.ok, report.error
    assert report.strategy == "full-scan"  # it was read again
    assert report.quarantined == 1 and report.invalid == 1 and report.fetched == len(records)
    assert report.new == report.shipped == 25 and report.skipped == 0
    assert len(list(quarantine.entries())) == 1


def test_a_page_read_again_in_the_same_pass_meets_the_record_it_quarantined(tmp_path):
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
    state = store.load(STREAM.key).state
    assert state.delivered_total == 25
    assert sorted(state.seen) == sorted(
        [quarantine_id(api.records[0])] + [event_id(r) for r in api.records[1:]]
    )


@pytest.mark.parametrize("shared", [False, True], ids=["run_stream", "run_streams"])
def test_a_bad_record_the_service_keeps_returning_outlives_the_look_back_window(tmp_path, shared):
    """Its remembered id is dated again once half a window has passed, so it is not forgotten (and
    quarantined again) while the service still returns the record. Before: quarantined 1, 0, 1."""
    api = FakeService("asc", True, True)
    api.records = trail_with_a_bad_record(3, "9999-bad")
    quarantine, store = LocalQuarantine(str(tmp_path)), MemoryStore()
    bad = quarantine_id(api.records[0])
    reports = [one_run(api, store, quarantine, shared)]
    loaded = store.load(STREAM.key)  # three windows later: the remembered id is dated long ago
    aged = dict(loaded.state.seen, **{bad: now_us() - 3 * LIMITS.window_s * 1_000_000})
    store.commit(STREAM.key, StreamState(loaded.state.watermark_us, aged, 3), loaded.version)
    fresh = make_records([0], now_us() - 1_000_000)[0]
    api.records.append({**fresh, "changes": {"n": "fresh"}})  # moves the watermark to now
    reports += [one_run(api, store, quarantine, shared) for _ in range(2)]
    assert all(r.ok for r in reports), [r.error for r in reports]
    assert [r.quarantined for r in reports] == [1, 0, 0]
    assert len(list(quarantine.entries())) == 1
    assert store.load(STREAM.key).state.seen[bad] > now_us() - LIMITS.window_s * 1_000_000  # dated again


def test_the_ids_ride_the_commit_of_records_still_in_the_open_batch(tmp_path):
    """With fewer records than a batch and a real linger, the run's end cuts the open batch before
    it makes last commits: the quarantined id rides the records' one commit, not one of its own."""
    api = FakeService("asc", True, True)
    api.records = trail_with_a_bad_record(3, "9999-bad")
    quarantine = LocalQuarantine(str(tmp_path))
    store = CheckedStore(quarantine, [quarantine_id(api.records[0])])
    report = one_run(api, store, quarantine, shared=True, linger_s=1.0)
    assert report.ok and report.quarantined == 1
    assert store.commits == 1
