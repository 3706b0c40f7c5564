"""The pure parts of delivery: which states acceptance lets commit."""

from __future__ import annotations

from typing import List, Tuple

from forwarder.delivery.batcher import Batch, Batcher
from forwarder.delivery.commits import CommitTracker
from forwarder.state.model import StreamState
from tests.delivery.helpers import BASE_US, WINDOW_US, add, records


def tracker_with(*streams: str) -> CommitTracker:
    tracker = CommitTracker(WINDOW_US)
    for stream in streams:
        tracker.open(stream, StreamState(), None)
    return tracker


def test_a_stream_commits_only_once_every_earlier_batch_of_it_was_accepted():
    tracker, batcher = tracker_with("a", "b"), Batcher(3, 10_000)
    a, b = records("a", 4), records("b", 2)
    first, second = add(batcher, "a", a) + add(batcher, "b", b)  # [a0 a1 a2] [a3 b0 b1]
    tracker.closed(first)
    tracker.closed(second)
    commits = tracker.accepted(second)
    assert [c.stream for c in commits] == ["b"]  # a waits for its first batch
    assert tracker.committed(commits[0], "v1") is None
    (commit,) = tracker.accepted(first)
    assert commit.stream == "a" and commit.state.delivered_total == 4  # both of a's batches at once
    assert tracker.committed(commit, "v1") is None
    assert not tracker.unsettled()


def two_batches_of_a(count: int) -> Tuple[CommitTracker, List[Batch]]:
    """Stream a's ``count`` records in two closed batches."""
    tracker, batcher = tracker_with("a"), Batcher(count // 2, 10_000)
    batches = add(batcher, "a", records("a", count))
    for batch in batches:
        tracker.closed(batch)
    return tracker, batches


def test_one_commit_at_a_time_per_stream_and_the_next_follows():
    tracker, (first, second) = two_batches_of_a(4)
    (commit,) = tracker.accepted(first)
    assert tracker.accepted(second) == []  # the first commit is being written
    follow = tracker.committed(commit, "v1")
    assert follow is not None and follow.version == "v1" and follow.state.delivered_total == 4


def test_a_refused_batch_fails_only_its_streams_from_their_record_in_it_on():
    tracker, batcher = tracker_with("a", "b", "c"), Batcher(3, 10_000)
    batches = add(batcher, "a", records("a", 2)) + add(batcher, "b", records("b", 2))
    batches += add(batcher, "a", records("a", 5)[2:]) + add(batcher, "c", records("c", 3))
    # [a0 a1 b0] [b1 a2 a3] [a4 c0 c1] + open [c2]
    for batch in batches:
        tracker.closed(batch)
    first, second, third = batches
    assert sorted(tracker.refused(second, "refused")) == ["a", "b"]
    assert [c.stream for c in tracker.accepted(third)] == ["c"]  # a's a4 follows its refused a2, a3
    assert tracker.failure("a") == "refused" and tracker.failure("c") is None
    # Records before the refused batch still commit once their batch is accepted: a0, a1 and b0.
    commits = tracker.accepted(first)
    assert {c.stream: c.state.delivered_total for c in commits} == {"a": 2, "b": 1}
    for commit in commits:
        assert tracker.committed(commit, "v1") is None  # and nothing after them


def test_a_lost_race_fails_that_stream_and_its_later_commits():
    tracker, (first, second) = two_batches_of_a(2)
    (commit,) = tracker.accepted(first)
    assert tracker.accepted(second) == []
    assert tracker.commit_failed(commit, "lost a race")
    assert tracker.failure("a") == "lost a race" and not tracker.unsettled()


def test_the_end_of_a_run_fails_streams_with_unconfirmed_batches():
    tracker, batcher = tracker_with("a", "b"), Batcher(2, 10_000)
    batches = add(batcher, "a", records("a", 2)) + add(batcher, "b", records("b", 2))
    for batch in batches:
        tracker.closed(batch)
    tracker.committed(tracker.accepted(batches[0])[0], "v1")
    assert tracker.abandon("not confirmed") == ["b"]
    assert tracker.position("a") is not None and tracker.position("a")[1] == "v1"  # type: ignore[index]


def test_quarantined_ids_ride_the_streams_next_commit_never_one_of_their_own_while_it_has_one():
    """Ids of records already written to quarantine need no sink, yet no write is made for them while
    the stream has a commit to come: they join it. Only once the run queued everything and nothing of
    the stream waits do they get the stream's last commit; a stream carrying none gets no commit."""
    tracker, (first, second) = two_batches_of_a(4)
    tracker.carry("a", {"q1": BASE_US})
    assert tracker.end() == []  # a's batches are still out: the ids wait for their commit
    (commit,) = tracker.accepted(first)
    assert commit.state.seen["q1"] == BASE_US and commit.state.delivered_total == 2
    tracker.carry("a", {"q2": BASE_US})  # while that commit is being written
    assert tracker.committed(commit, "v1") is None and tracker.unsettled()  # second not accepted yet
    (follow,) = tracker.accepted(second)
    assert follow.version == "v1" and {"q1", "q2"} <= set(follow.state.seen)
    assert follow.state.delivered_total == 4
    assert tracker.committed(follow, "v2") is None and not tracker.unsettled()

    idle = tracker_with("idle", "kept")
    idle.carry("kept", {"q3": BASE_US})
    (last,) = idle.end()  # nothing pending for "kept": its last commit carries the ids; "idle": none
    assert last.stream == "kept" and last.segments == [] and last.version is None
    assert last.state.seen == {"q3": BASE_US} and last.state.watermark_us is None
    assert last.state.delivered_total == 0
    assert idle.unsettled()  # the end of the run waits for it
    assert idle.committed(last, "v1") is None and not idle.unsettled()


def test_the_last_commit_for_quarantined_ids_waits_for_the_commit_being_written():
    tracker, (first, second) = two_batches_of_a(4)
    (commit,) = tracker.accepted(first)
    assert tracker.committed(commit, "v1") is None
    (follow,) = tracker.accepted(second)
    tracker.carry("a", {"q": BASE_US})  # after the stream's last batch was accepted
    assert tracker.end() == []  # one commit at a time: the ids follow the one being written
    last = tracker.committed(follow, "v2")
    assert last is not None and last.version == "v2" and last.segments == [] and "q" in last.state.seen
    assert last.state.delivered_total == 4
    assert tracker.committed(last, "v3") is None and not tracker.unsettled()


def test_a_failed_stream_drops_its_quarantined_ids():
    """Its state stays where it was last committed: the next run quarantines the record again rather
    than let a state past a failure be written."""
    tracker, (first, second) = two_batches_of_a(4)
    tracker.carry("a", {"q": BASE_US})
    assert tracker.refused(first, "refused") == ["a"]
    tracker.carry("a", {"q2": BASE_US})
    assert tracker.accepted(second) == [] and tracker.end() == [] and not tracker.unsettled()
    tracker, (first, _) = two_batches_of_a(4)
    (commit,) = tracker.accepted(first)
    tracker.carry("a", {"q": BASE_US})
    assert tracker.commit_failed(commit, "lost a race")
    assert tracker.end() == [] and not tracker.unsettled()
