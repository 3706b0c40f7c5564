"""The linger: a partly filled batch, shared by the streams that added to it, is sent once it has
waited ``linger_s`` on the shipper's clock, without more events and before the run ends."""

from __future__ import annotations

import threading
from typing import List, Sequence

from forwarder.delivery.shipper import Shipper
from forwarder.events import SendResult
from forwarder.quarantine import LocalQuarantine
from forwarder.state.model import StreamState
from tests.delivery.test_batching_and_commits import WINDOW_US, events, records
from tests.fakes import MemoryStore

LINGER_S = 0.25  # and the clock steps below: binary fractions, so the sums are exact


class StillClock:
    """Stands still until the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RecordingSink:
    name = "recording"
    max_batch_events, max_batch_bytes, max_in_flight = 100, 10**6, 2

    def __init__(self) -> None:
        self.batches: List[List[str]] = []
        self.sent = threading.Event()

    def send(self, batch: Sequence) -> SendResult:
        self.batches.append([e.id for e in batch])
        self.sent.set()
        return SendResult.all_delivered(len(batch))

    def close(self) -> None:
        pass


def test_a_partial_batch_of_two_streams_is_sent_when_the_linger_is_over_not_before(tmp_path):
    clock, sink, store = StillClock(), RecordingSink(), MemoryStore()
    shipper = Shipper(
        sink, LocalQuarantine(str(tmp_path)), store, window_us=WINDOW_US, linger_s=LINGER_S, clock=clock
    )
    added = {"user/a": records("a@example.com", 3), "user/b": records("b@example.com", 2)}
    for stream, recs in added.items():
        assert shipper.add(stream, recs, events(recs), StreamState(), None) is None

    # The sender wakes every linger_s of real time; on a clock standing still the linger never ends.
    assert not sink.sent.wait(3 * LINGER_S), "a partial batch was sent before its linger was over"
    clock.now += LINGER_S - 0.125
    assert not sink.sent.wait(2 * LINGER_S), "a partial batch was sent before its linger was over"

    clock.now += 0.125  # the linger is over: no more events, and the run is not ending
    assert sink.sent.wait(30), "a partial batch was not sent once its linger was over"
    assert sink.batches == [[r.event_id for recs in added.values() for r in recs]]  # one batch, both streams

    shipper.finish(timeout_s=30)
    assert len(sink.batches) == 1  # nothing was left for the end of the run
    assert {s: store.load(s).state.delivered_total for s in added} == {"user/a": 3, "user/b": 2}


class LakeSink(RecordingSink):
    linger_s = 4 * LINGER_S  # a data lake's sink asks for fewer, larger objects


def test_a_sink_asking_for_a_longer_linger_gets_it(tmp_path):
    clock, sink = StillClock(), LakeSink()
    shipper = Shipper(
        sink,
        LocalQuarantine(str(tmp_path)),
        MemoryStore(),
        window_us=WINDOW_US,
        linger_s=LINGER_S,
        clock=clock,
    )
    recs = records("a@example.com", 2)
    assert shipper.add("user/a", recs, events(recs), StreamState(), None) is None

    clock.now += 2 * LINGER_S  # past the run's linger, not the sink's
    assert not sink.sent.wait(3 * LINGER_S), "the batch did not wait the linger its sink asked for"
    clock.now += 2 * LINGER_S
    assert sink.sent.wait(30), "the batch was not sent once the sink's linger was over"
    shipper.finish(timeout_s=30)
    assert sink.batches == [[r.event_id for r in recs]]
