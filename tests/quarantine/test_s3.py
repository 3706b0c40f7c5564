"""The S3 quarantine through `quarantine list` and `quarantine replay`: against the moto server, entries
leave only once the sink proved acceptance; against a bucket that is not there, or an endpoint that
never answers, trickles its body or lists forever, each command ends within FORWARDER_HTTP_TIMEOUT
with exit 1 and a message naming the bucket, never a traceback.

The S3 quarantine's `remove` against the moto server when another writer changes the object
between remove's read and its write: another replay removing entries, a run keeping the same
rejections again after a crash, or anything else replacing it. The write is conditional on the
version read (If-Match its ETag, on PutObject and on DeleteObject), so the removal is applied again
to what is there now: nothing another writer wrote is lost, nothing another replay removed comes
back. A writer that never pauses ends in a StateError naming the object, with nothing lost.

The other writer runs in the test's hook on the quarantine's own S3 client, right after each
GetObject has answered: boto3 and the moto server stay real.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Tuple

import boto3
import pytest

from forwarder import aws
from forwarder.errors import StateError
from forwarder.events import Event, Rejection
from forwarder.quarantine import open_quarantine, quarantine_lines, unplaceable
from forwarder.quarantine import s3 as s3_quarantine
from forwarder.quarantine.s3 import S3Quarantine
from forwarder.replay import replay
from forwarder.sinks import open_sink
from tests.aws.conftest import connections
from tests.e2e.helpers import cli, env_for, settings_for
from tests.hostile.test_aws_deadline import outcome_of  # what a call raised, on a guarded thread

STREAM = "user/alice@example.com"
GUARD_S = 60  # only a command that ignores its deadline reaches this
UNPLACEABLE = {"user": "alice@example.com", "created_at": None}


def refused(n: int) -> Rejection:
    eid = f"{n:064x}"
    body = json.dumps({"@timestamp": "2026-01-02T03:04:05.000Z", "event": {"id": eid}, "n": n}).encode()
    return Rejection(Event(eid, 1_767_323_045_000_000, body), "mapper_parsing_exception: [n]")


def objects(bucket: str) -> list:
    listing = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix="dead-letters/")
    return sorted(item["Key"] for item in listing.get("Contents", []))


def env(tmp_path, sink: str, quarantine: str, **extra: str) -> dict:
    return env_for(
        "http://127.0.0.1:9", sink, str(tmp_path / "state"), FORWARDER_QUARANTINE=quarantine, **extra
    )


def test_kept_listed_replayed_then_removed(bucket, hec, tmp_path):
    location = f"s3://{bucket}/dead-letters"
    quarantine = open_quarantine(location)
    quarantine.keep(STREAM, [refused(1), refused(2)])
    still = unplaceable(UNPLACEABLE, "no created_at")
    quarantine.keep(STREAM, [refused(3), still])
    settings = env(tmp_path, hec.url, location)

    listed = cli("quarantine", "list", env=settings)
    assert listed.returncode == 0, listed.stderr
    entries = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(e["event_id"] for e in entries) == sorted(
        [f"{n:064x}" for n in (1, 2, 3)] + [still.event.id]
    )
    assert {e["location"] for e in entries} == {f"s3://{bucket}/{key}" for key in objects(bucket)}
    assert len(objects(bucket)) == 2

    replayed = cli("quarantine", "replay", env=settings)
    assert replayed.returncode == 3, replayed.stderr  # the record that still cannot be placed stays
    outcome = json.loads(replayed.stdout)
    assert outcome["replayed"] == 3 and outcome["error"] is None
    assert [e["event_id"] for e in outcome["still_quarantined"]] == [still.event.id]
    assert sorted(hec.event_ids()) == [f"{n:064x}" for n in (1, 2, 3)]

    [left] = objects(bucket)  # the first object deleted, the second rewritten with what stays
    body = boto3.client("s3").get_object(Bucket=bucket, Key=left)["Body"].read()
    assert [json.loads(line)["event_id"] for line in body.splitlines()] == [still.event.id]
    again = cli("quarantine", "replay", env=settings)
    assert json.loads(again.stdout)["replayed"] == 0 and len(hec.event_ids()) == 3


@pytest.mark.parametrize("command", ["list", "replay"])
def test_a_missing_bucket_is_a_clear_failure(aws, hec, tmp_path, command):
    result = cli("quarantine", command, env=env(tmp_path, hec.url, "s3://no-such-bucket/q"))

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cannot list s3://no-such-bucket/q/" in result.stderr and "NoSuchBucket" in result.stderr


def test_an_entry_is_removed_by_the_location_quarantine_list_shows(bucket, tmp_path):
    location = f"s3://{bucket}/dead-letters"
    quarantine = open_quarantine(location)
    quarantine.keep(STREAM, [refused(1), refused(2)])
    listed = cli("quarantine", "list", "--id", f"{1:064x}", env=env(tmp_path, "http://127.0.0.1:9", location))
    [entry] = [json.loads(line) for line in listed.stdout.splitlines()]
    [key] = objects(bucket)
    assert entry["location"] == f"s3://{bucket}/{key}"

    quarantine.remove(entry["location"], {entry["event_id"]})
    assert [e.event_id for e in quarantine.entries()] == [f"{2:064x}"]
    quarantine.remove(key, {f"{2:064x}"})  # the bare key, as older callers pass it
    assert objects(bucket) == []


@pytest.mark.parametrize(
    "where",
    [
        "s3://another-bucket/dead-letters/year=2026/one.ndjson",
        "elsewhere/year=2026/one.ndjson",
        "s3://{bucket}/elsewhere/year=2026/one.ndjson",
        "s3://{bucket}/dead-letters/tenant-a/year=2026/one.ndjson",  # a tenant's quarantine nested inside
    ],
)
def test_a_location_outside_the_quarantine_is_refused_and_left_alone(bucket, where):
    where = where.format(bucket=bucket)
    boto3.client("s3").put_object(Bucket=bucket, Key="elsewhere/year=2026/one.ndjson", Body=b"{}\n")
    quarantine = open_quarantine(f"s3://{bucket}/dead-letters")

    with pytest.raises(StateError) as raised:
        quarantine.remove(where, {"x"})

    assert str(raised.value) == f"{where} is not in the quarantine s3://{bucket}/dead-letters"
    assert boto3.client("s3").list_objects_v2(Bucket=bucket)["KeyCount"] == 1


def test_an_object_another_replay_removed_meanwhile_is_nothing_to_remove(bucket):
    quarantine = open_quarantine(f"s3://{bucket}/dead-letters")
    quarantine.keep(STREAM, [refused(1)])
    [entry] = quarantine.entries()
    boto3.client("s3").delete_object(Bucket=bucket, Key=entry.where)

    quarantine.remove(entry.where, {entry.event_id})

    assert objects(bucket) == [] and list(quarantine.entries()) == []


# -- endpoints that do not answer as S3 does -------------------------------------------------------


def test_quarantine_list_ends_at_the_http_timeout(silent, tmp_path):
    outside = {k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_")}
    result = subprocess.run(
        [sys.executable, "-m", "forwarder", "quarantine", "list"],
        env={**outside, "FORWARDER_QUARANTINE": "s3://quiet/q", "FORWARDER_HTTP_TIMEOUT": "1"},
        capture_output=True,
        text=True,
        timeout=GUARD_S,
    )

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cannot list s3://quiet/q/: S3 ListObjectsV2: no complete response within 1 s" in result.stderr
    assert connections(silent) == 1  # cut at the deadline: botocore retried none


class FakeS3(BaseHTTPRequestHandler):
    """Lists one object, then sends its body a byte at a time (each byte well inside the read
    timeout); with ``endless``, every listing is empty and says there is more, under the same token."""

    protocol_version = "HTTP/1.1"
    endless = False

    def do_GET(self) -> None:
        if "list-type=2" in self.path:
            page = (
                "<KeyCount>0</KeyCount><IsTruncated>true</IsTruncated><NextContinuationToken>again</NextContinuationToken>"
                if self.endless
                else "<KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>"
                "<Contents><Key>q/year=2026/one.ndjson</Key><Size>1000</Size></Contents>"
            )
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                f"<Name>slow</Name><Prefix>q/</Prefix><MaxKeys>1000</MaxKeys>{page}</ListBucketResult>"
            ).encode()
            self._headers(len(body), "application/xml")
            self.wfile.write(body)
            return
        self._headers(1000, "application/x-ndjson")
        for _ in range(1000):
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(0.3)

    def _headers(self, length: int, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type, monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    """boto3 pointed at a loopback server answering by (a fresh subclass of) ``handler``."""
    handler = type("Handler", (handler,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fake_s3(aws, monkeypatch) -> Iterator[type]:
    with serving(FakeS3, monkeypatch) as handler:
        yield handler


def test_a_trickled_object_body_ends_at_the_http_timeout(fake_s3):
    quarantine = S3Quarantine("s3://slow/q", client=aws.client("s3", 1))

    error = outcome_of(lambda: list(quarantine.entries()))

    assert isinstance(error, StateError), repr(error)
    assert (
        str(error) == "cannot read s3://slow/q/year=2026/one.ndjson: S3 GetObject: "
        "no complete response within 1 s (HTTP timeout)"
    )


def test_a_listing_that_never_ends_is_refused(fake_s3):
    fake_s3.endless = True
    quarantine = S3Quarantine("s3://slow/q", client=aws.client("s3", 5))

    error = outcome_of(lambda: [e.where for e in quarantine.entries()])

    assert isinstance(error, StateError) and "truncated listing without a new continuation token" in str(
        error
    )


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
