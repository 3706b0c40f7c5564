"""The S3 quarantine's `remove` against the moto server when another writer changes the object
between remove's read and its write: another replay removing entries, a run keeping the same
rejections again after a crash, or anything else replacing it. The write is conditional on the
version read (If-Match its ETag, on PutObject and on DeleteObject), so the removal is applied again
to what is there now: nothing another writer wrote is lost, nothing another replay removed comes
back. A writer that never pauses ends in a StateError naming the object, with nothing lost.

The other writer runs in the test's hook on the quarantine's own S3 client, right after each
GetObject has answered: boto3 and the moto server stay real."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Dict, List, Tuple

import boto3
import pytest

from forwarder import aws
from forwarder.errors import StateError
from forwarder.events import Rejection
from forwarder.quarantine import quarantine_lines
from forwarder.quarantine import s3 as s3_quarantine
from forwarder.quarantine.s3 import S3Quarantine
from forwarder.replay import replay
from forwarder.sinks import open_sink
from tests.aws.test_quarantine_s3 import STREAM, refused, serving
from tests.e2e.helpers import settings_for


class Meanwhile:
    """An S3 client that, each time a GetObject has answered (before its caller can write), lets
    ``other(key, reads)`` change the object: the gap between remove's read and its write."""

    def __init__(self, client: Any, other: Callable[[str, int], None]) -> None:
        self._client = client
        self.other = other
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def get_object(self, **params: Any) -> Dict[str, Any]:
        answer = self._client.get_object(**params)
        self.reads += 1
        self.other(params["Key"], self.reads)
        return answer


def racing(bucket: str, other: Callable[[str, int], None]) -> Tuple[S3Quarantine, Meanwhile]:
    """The quarantine of ``kept`` on a client where ``other`` writes after each read, and that client."""
    client = Meanwhile(aws.client("s3", 10), other)
    return S3Quarantine(f"s3://{bucket}/dead-letters", client=client), client


def stored(bucket: str, key: str) -> List[Dict[str, Any]]:
    """The entries of the object (none once it is deleted)."""
    client = boto3.client("s3")
    try:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except client.exceptions.NoSuchKey:
        return []
    return [json.loads(line) for line in body.splitlines()]


def ids(entries: List[Dict[str, Any]]) -> List[str]:
    return [e["event_id"] for e in entries]


def eid(n: int) -> str:
    return f"{n:064x}"


def put_entries(bucket: str, key: str, numbers: List[int], reason: str = "refused") -> None:
    """Another writer replacing the object unconditionally (as a run's keep does)."""
    rejections = [Rejection(refused(n).event, reason) for n in numbers]
    body = b"".join(quarantine_lines(STREAM, rejections, 1_767_323_045_000_000))
    boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=body)


@pytest.fixture
def kept(bucket):
    """The plain quarantine holding entries 1, 2 and 3 in one object; returns it and the object."""
    quarantine = S3Quarantine(f"s3://{bucket}/dead-letters")
    quarantine.keep(STREAM, [refused(1), refused(2), refused(3)])
    [entry, *_] = quarantine.entries()
    return quarantine, entry.where


def key_of(where: str) -> str:
    """The key of ``s3://bucket/key`` (or of a bare key)."""
    return where.split("://", 1)[1].split("/", 1)[1] if "://" in where else where


def test_two_replays_at_once_each_remove_their_own_and_none_comes_back(bucket, kept):
    plain, where = kept

    def other_replay(key: str, reads: int) -> None:
        if reads == 1:  # the other replay removes entry 2 after this one read the object
            plain.remove(where, {eid(2)})

    mine, client = racing(bucket, other_replay)
    mine.remove(where, {eid(1)})

    assert ids(stored(bucket, key_of(where))) == [eid(3)]  # 2 stays removed, 1 removed too
    assert client.reads == 2  # refused once (412), read again, applied


def test_a_run_keeping_the_same_rejections_again_meanwhile_gets_the_removal_applied_to_its_object(
    bucket, kept
):
    _, where = kept

    def run_keeps_again(key: str, reads: int) -> None:
        if reads == 1:  # the same key (stream and ids), a new version: refused again, other reason
            put_entries(bucket, key, [1, 2, 3], reason="refused again after the crash")

    racing(bucket, run_keeps_again)[0].remove(where, {eid(1)})

    left = stored(bucket, key_of(where))
    assert ids(left) == [eid(2), eid(3)]
    assert {e["reason"] for e in left} == {"refused again after the crash"}  # the new version's lines


def test_an_object_replaced_before_its_delete_is_rewritten_with_what_it_now_holds(bucket, kept):
    _, where = kept

    def replaced(key: str, reads: int) -> None:
        if reads == 1:  # remove would delete the object: all it read is replayed
            put_entries(bucket, key, [1, 2, 3, 9])

    racing(bucket, replaced)[0].remove(where, {eid(1), eid(2), eid(3)})

    assert ids(stored(bucket, key_of(where))) == [eid(9)]  # the conditional DeleteObject was refused


def test_an_object_another_replay_deleted_after_the_read_is_not_brought_back(bucket, kept):
    plain, where = kept

    def other_replay(key: str, reads: int) -> None:
        if reads == 1:
            plain.remove(where, {eid(1), eid(2), eid(3)})

    racing(bucket, other_replay)[0].remove(where, {eid(1)})

    assert boto3.client("s3").list_objects_v2(Bucket=bucket).get("KeyCount") == 0


def always_changing(bucket: str) -> Callable[[str, int], None]:
    def change(key: str, reads: int) -> None:
        put_entries(bucket, key, [1, 2, 3, 100 + reads])

    return change


def test_a_writer_that_never_pauses_ends_in_a_state_error_and_loses_nothing(bucket, kept):
    _, where = kept
    quarantine, client = racing(bucket, always_changing(bucket))

    with pytest.raises(StateError) as raised:
        quarantine.remove(where, {eid(1)})

    assert str(raised.value) == (
        f"cannot remove 1 replayed entries from {where}: it changed concurrently on each of "
        f"{s3_quarantine.ATTEMPTS} tries (another replay or a run writing it); they stay quarantined "
        "until a later replay"
    )
    assert client.reads == s3_quarantine.ATTEMPTS  # bounded
    last = 100 + s3_quarantine.ATTEMPTS  # the other writer's last version, untouched
    assert ids(stored(bucket, key_of(where))) == [eid(1), eid(2), eid(3), eid(last)]


def test_replay_reports_the_lost_races_as_its_error_and_the_entries_stay(bucket, kept, hec, tmp_path):
    _, where = kept
    quarantine, client = racing(bucket, lambda key, reads: None)
    listed = list(quarantine.entries())
    client.other = always_changing(bucket)
    settings = settings_for("http://127.0.0.1:9", hec.url, str(tmp_path / "state"))
    sink = open_sink(settings.sink)
    try:
        outcome = replay(quarantine, sink, settings, [], [])
    finally:
        sink.close()

    assert [e.where for e in listed] == [where] * 3
    assert sorted(hec.event_ids()) == [eid(1), eid(2), eid(3)]  # delivered, then not removed
    assert outcome.replayed == 0 and outcome.error is not None
    assert outcome.error.startswith(f"cannot remove 3 replayed entries from {where}: it changed concurrently")
    assert set(ids(stored(bucket, key_of(where)))) >= {eid(1), eid(2), eid(3)}


class InFlight(BaseHTTPRequestHandler):
    """One object holding entries 1 and 2 at version "v1"; the first conditional PUT is refused with
    409 ConditionalRequestConflict (another conditional write to the key in flight), later ones
    stored as "v2". Records each request's method and If-Match."""

    protocol_version = "HTTP/1.1"
    seen: List[Tuple[str, str]]
    put = b""
    body = b"".join(quarantine_lines(STREAM, [refused(1), refused(2)], 1_767_323_045_000_000))

    def do_GET(self) -> None:
        self.seen.append(("GET", ""))
        self._answer(200, self.body, {"ETag": '"v1"'})

    def do_PUT(self) -> None:
        self.seen.append(("PUT", self.headers.get("If-Match", "")))
        type(self).put = self.rfile.read(int(self.headers["Content-Length"]))
        if len(self.seen) == 2:
            error = b"<Error><Code>ConditionalRequestConflict</Code><Message>in flight</Message></Error>"
            self._answer(409, error, {"Content-Type": "application/xml"})
        else:
            self._answer(200, b"", {"ETag": '"v2"'})

    def _answer(self, status: int, body: bytes, headers: Dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.usefixtures("aws")
def test_a_conditional_write_in_flight_409_is_a_lost_race_read_again(monkeypatch):
    with serving(InFlight, monkeypatch) as handler:
        handler.seen = []
        quarantine = S3Quarantine("s3://fake/q", client=aws.client("s3", 10))
        quarantine.remove("s3://fake/q/year=2026/one.ndjson", {eid(1)})

    assert handler.seen == [("GET", ""), ("PUT", '"v1"'), ("GET", ""), ("PUT", '"v1"')]
    assert [json.loads(line)["event_id"] for line in handler.put.splitlines()] == [eid(2)]


class NoETag(InFlight):
    """Answers GetObject without an ETag: nothing to make a write conditional on."""

    def do_GET(self) -> None:
        self.seen.append(("GET", ""))
        self._answer(200, self.body, {})


@pytest.mark.usefixtures("aws")
def test_an_object_read_without_an_etag_is_not_rewritten(monkeypatch):
    with serving(NoETag, monkeypatch) as handler:
        handler.seen = []
        quarantine = S3Quarantine("s3://fake/q", client=aws.client("s3", 10))
        with pytest.raises(StateError) as raised:
            quarantine.remove("s3://fake/q/year=2026/one.ndjson", {eid(1)})

    assert str(raised.value) == (
        "cannot rewrite s3://fake/q/year=2026/one.ndjson: S3 answered GetObject without an ETag"
    )
    assert handler.seen == [("GET", "")]  # no unconditional write
