"""Late records (issue 23, item 4, the read side): a poll reads from the watermark minus the tie
margin, not the whole look-back window; a deep re-sweep (a longer reach, the scheduler's to ask
for) finds the records that reached the API late, ships each once and counts them."""

from __future__ import annotations

from forwarder.reading.select import Limits
from forwarder.records import event_id
from forwarder.timeutil import now_us
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import make_records
from tests.pipeline.test_strategy_property import FakeService, run_with

LIMITS = Limits(initial_lookback_s=86400, window_s=3600, max_records_per_pass=1000, tie_margin_s=5)


def test_a_poll_reads_from_the_watermark_minus_the_tie_margin():
    """Before, every poll read the last hour again: 60 records fetched to ship none."""
    api = FakeService("asc", True, True)
    api.records = make_records(list(range(0, 3000, 50)), now_us() - 3000 * 1_000_000)
    store, sink = MemoryStore(), MemorySink()
    first = run_with(api, 200, store, sink, LIMITS, sweep=False)
    assert first.ok and first.shipped == 60
    idle = run_with(api, 200, store, sink, LIMITS, sweep=False)
    assert idle.ok and idle.shipped == 0 and idle.api_calls == 1
    assert idle.fetched == 1  # the record at the watermark: the only one inside the tie margin


def test_a_late_record_waits_for_a_deep_sweep_and_is_counted_late():
    base = now_us() - 3000 * 1_000_000
    api = FakeService("asc", True, True)
    api.records = make_records(list(range(0, 3000, 50)), base)
    store, sink = MemoryStore(), MemorySink()
    assert run_with(api, 200, store, sink, LIMITS, sweep=False).shipped == 60
    late, tied = make_records([1000, 2947], base, user="alice@example.com")[:2]
    late["changes"], tied["changes"] = {"late": 1}, {"tied": 1}
    api.records += [late, tied]  # one 33 minutes behind the watermark, one 3 s behind it
    poll = run_with(api, 200, store, sink, LIMITS, sweep=False)
    assert poll.ok and poll.shipped == 1 and poll.late == 1  # inside the tie margin: found now
    sweep = run_with(api, 200, store, sink, LIMITS, sweep=True)
    assert sweep.ok and sweep.shipped == 1 and sweep.late == 1 and sweep.skipped == 61
    again = run_with(api, 200, store, sink, LIMITS, sweep=True)
    assert again.ok and again.shipped == 0 and again.late == 0
    assert sorted(sink.delivered) == sorted(event_id(r) for r in api.records)  # each once
