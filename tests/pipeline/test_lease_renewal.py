"""The run lease is renewed while the run works, and a lost lease stops the run."""

from __future__ import annotations

import pytest

from forwarder.errors import LeaseHeld
from forwarder.pipeline import run_streams
from forwarder.quarantine import LocalQuarantine
from forwarder.reading.select import Limits
from forwarder.report import RunReport
from forwarder.streams import Stream
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import ListSource, make_records, run_context

STREAMS = [Stream("user", f"u{i}@example.com") for i in range(4)]


class CountingLease:
    owner = "test"

    def __init__(self, lose_after: int = 10**9) -> None:
        self.renewals = 0
        self.lose_after = lose_after

    def renew(self) -> None:
        self.renewals += 1
        if self.renewals > self.lose_after:
            raise LeaseHeld("taken over by another run")

    def release(self) -> None:
        pass


def context(lease, tmp_path):
    from forwarder.timeutil import now_us

    base_us = now_us() - 3600 * 1_000_000
    records = [r for s in STREAMS for r in make_records(list(range(10)), base_us, s.name)]
    source, sink = ListSource(records, "asc", 5, 0), MemorySink(max_batch_events=3)
    quarantine, limits = LocalQuarantine(str(tmp_path)), Limits(86400, 3600, 100)
    # lease_ttl_s=0: renew at every opportunity
    return run_context(source, MemoryStore(), sink, quarantine, limits, STREAMS, lease=lease, lease_ttl_s=0)


def test_the_lease_is_renewed_between_streams_and_batches(tmp_path):
    lease = CountingLease()
    report = RunReport(started="now")
    ctx = context(lease, tmp_path)
    run_streams(ctx, STREAMS, 1, report)
    batches = len(ctx.sink.batches)  # type: ignore[attr-defined]
    assert report.ok and batches >= 40 // 3
    assert lease.renewals >= len(STREAMS) + batches  # between streams, and after every accepted batch


def test_a_lost_lease_stops_the_run(tmp_path):
    lease = CountingLease(lose_after=2)
    report = RunReport(started="now")
    with pytest.raises(LeaseHeld):
        run_streams(context(lease, tmp_path), STREAMS, 1, report)
    assert len(report.streams) < len(STREAMS)
