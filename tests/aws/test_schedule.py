"""The run cursor: streams that waited longest go first, with one small document and few writes."""

from __future__ import annotations

import pytest

from forwarder.report import RunReport, StreamReport
from forwarder.schedule import RunCursor, rotate
from forwarder.state.local import LocalStore
from forwarder.state.s3 import open_s3
from forwarder.streams import Stream

PLAN = [Stream("user", f"{c}@example.com") for c in "abcdef"]


def keys(streams):
    return [s.key for s in streams]


def report(ran, left):
    result = RunReport(started="now")
    result.streams = [StreamReport(key) for key in ran]
    result.not_started = list(left)
    return result


def test_rotate_starts_at_the_named_stream_or_the_next_one_after_it():
    assert keys(rotate(PLAN, None)) == keys(PLAN)
    assert keys(rotate(PLAN, "user/c@example.com"))[:3] == [
        "user/c@example.com",
        "user/d@example.com",
        "user/e@example.com",
    ]
    assert keys(rotate(PLAN, "user/cc@example.com"))[0] == "user/d@example.com"  # gone: the next one
    assert keys(rotate(PLAN, "user/zz@example.com")) == keys(PLAN)  # past the end: wrap around
    assert rotate([], "user/a@example.com") == []


class CountingSlot:
    """A ConditionalSlot in memory that counts writes."""

    location = "memory"

    def __init__(self):
        self.doc, self.version, self.writes = None, None, 0

    def read(self):
        return self.doc, self.version

    def put(self, doc, expected):
        from forwarder.errors import ConflictError

        if expected != self.version:
            raise ConflictError("stale")
        self.writes += 1
        self.doc, self.version = dict(doc), str(self.writes)
        return self.version

    def delete(self, expected):
        self.doc = self.version = None


def simulate(slot, capacity):
    """One run that manages ``capacity`` streams; returns the keys it started."""
    cursor = RunCursor(slot)
    order = keys(cursor.order(PLAN))
    cursor.save(report(order[:capacity], order[capacity:]))
    return order[:capacity]


def test_runs_cut_short_serve_the_longest_waiting_first():
    slot = CountingSlot()
    assert simulate(slot, 4) == keys(PLAN)[:4]
    assert simulate(slot, 4) == keys(PLAN)[4:] + keys(PLAN)[:2]
    assert simulate(slot, 3) == keys(PLAN)[2:5]
    assert slot.writes == 3


def test_a_complete_run_writes_nothing():
    slot = CountingSlot()
    simulate(slot, 6)
    simulate(slot, 6)
    assert slot.writes == 0
    simulate(slot, 5)
    simulate(slot, 6)  # the run served the left-over stream first and then the rest: no change
    assert slot.writes == 1


def test_a_lost_race_on_the_cursor_is_not_an_error():
    slot = CountingSlot()
    mine = RunCursor(slot)
    mine.order(PLAN)
    simulate(slot, 2)  # another run moved the cursor meanwhile
    mine.save(report(keys(PLAN)[:1], keys(PLAN)[1:]))
    assert slot.doc["first"] == "user/c@example.com"  # the other run's word stands


def test_stores_without_a_cursor_keep_the_plan_order(tmp_path):
    cursor = RunCursor.for_store(LocalStore(str(tmp_path)))
    assert keys(cursor.order(PLAN)) == keys(PLAN)
    cursor.save(report([], keys(PLAN)))


@pytest.mark.usefixtures("aws")
def test_the_cursor_lives_in_the_s3_store(bucket):
    store = open_s3(f"s3://{bucket}/p")
    cursor = RunCursor.for_store(store)
    cursor.order(PLAN)
    cursor.save(report(keys(PLAN)[:2], keys(PLAN)[2:]))
    assert keys(RunCursor.for_store(store).order(PLAN))[0] == "user/c@example.com"
