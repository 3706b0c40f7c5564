"""Where events a sink refused for good are kept, with the reason, so nothing is silently dropped.

``FORWARDER_QUARANTINE`` is a directory (CLI, containers) or ``s3://bucket/prefix`` (Lambda, whose disk
does not outlive the invocation). Both keep one JSON line per entry: when, which stream, what kind
(``event``: a formatted event a sink refused; ``record``: a raw audit record that cannot be placed in
time), its id, the reason, its time and the event or record itself. ``entries`` and ``remove`` serve
``audit-forwarder quarantine list / replay`` (forwarder/replay.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Protocol, Sequence, Set

from . import jsonutil
from .errors import StateError
from .events import Event, Rejection
from .files import fsync_dir, write_atomic
from .timeutil import format_us, now_us

log = logging.getLogger(__name__)

try:  # POSIX: a run appending and a replay removing, in two processes, take turns
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process at a time
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Entry:
    """One quarantined item as read back: ``where`` is the file or object holding it."""

    where: str
    doc: Dict[str, Any]

    @property
    def event_id(self) -> str:
        return str(self.doc.get("event_id", ""))


class Quarantine(Protocol):
    location: str

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None: ...

    def entries(self) -> Iterator[Entry]: ...

    def remove(self, where: str, event_ids: Set[str]) -> None:
        """Drop the entries of ``where`` with these ids (replayed: the sink proved acceptance)."""
        ...


def unplaceable(raw: Any, reason: str) -> Rejection:
    """A raw audit record that cannot be placed in time, kept as the JSON it came in (escaped to
    ASCII, so bytes that are not UTF-8 and lone surrogates survive) under the digest of that text."""
    text = jsonutil.ascii_text(raw)
    body = text.encode("ascii")
    return Rejection(Event(hashlib.sha256(body).hexdigest(), 0, body), reason, kind="record")


def quarantine_lines(stream_key: str, rejections: Sequence[Rejection], at_us: int) -> List[bytes]:
    return [
        jsonutil.dumps(
            {
                "quarantined_at": format_us(at_us),
                "stream": stream_key,
                "kind": r.kind,
                "event_id": r.event.id,
                "reason": r.reason,
                "time": format_us(r.event.time_us),
                "is_json": r.event.is_json,
                r.kind: r.event.body.decode("utf-8", "replace"),
            }
        )
        + b"\n"
        for r in rejections
    ]


class LocalQuarantine:
    """Appends one JSON line per rejected event to ``<directory>/quarantine.ndjson``, fsynced."""

    def __init__(self, directory: str) -> None:
        self.location = str(Path(directory) / "quarantine.ndjson")
        self._lock = threading.Lock()  # this process's stream threads; the flock in _locked: other processes

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None:
        if not rejections:
            return
        lines = quarantine_lines(stream_key, rejections, now_us())
        try:
            with self._locked(), open(self.location, "ab+") as fh:
                fh.seek(0, os.SEEK_END)
                new = fh.tell() == 0
                if not new:  # a line torn by a killed writer must not swallow the first new one
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":
                        fh.write(b"\n")
                fh.writelines(lines)
                fh.flush()
                os.fsync(fh.fileno())
            if new:  # the state commits past these events: the file itself must survive a crash
                fsync_dir(os.path.dirname(self.location))
        except OSError as exc:
            raise StateError(f"cannot write {self.location}: {exc.strerror or exc}") from None

    def entries(self) -> Iterator[Entry]:
        try:
            with open(self.location, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return
        torn = 0
        for line in data.splitlines():
            if not line.strip():
                continue
            try:
                value = jsonutil.loads(line)
            except ValueError:
                torn += 1  # a writer killed mid-line: the events of whole lines still count
                continue
            yield Entry(self.location, value)
        if torn:
            log.warning("skipped unreadable quarantine lines", extra={"file": self.location, "lines": torn})

    def remove(self, where: str, event_ids: Set[str]) -> None:
        with self._locked():  # re-read under the lock: entries kept meanwhile stay
            try:
                with open(self.location, "rb") as fh:
                    lines = fh.read().splitlines(keepends=True)
            except FileNotFoundError:
                return
            kept = [line for line in lines if _entry_id(line) not in event_ids]
            try:
                write_atomic(self.location, b"".join(kept))
            except OSError as exc:
                raise StateError(f"cannot rewrite {self.location}: {exc.strerror or exc}") from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This process's threads and other processes (a run and a replay) take turns."""
        with self._lock:
            Path(self.location).parent.mkdir(parents=True, exist_ok=True)
            if fcntl is None:
                yield
                return
            with open(self.location + ".lock", "ab") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _entry_id(line: bytes) -> Optional[str]:
    try:
        return str(jsonutil.loads(line).get("event_id"))
    except (ValueError, AttributeError):
        return None  # an unreadable line is kept as it is


class S3Quarantine:
    """One NDJSON object per call under ``<prefix>/year=/month=/day=/`` of the day it was kept.

    The key is a digest of the stream and the event ids, so the same rejections kept again after a
    crash (the batch is re-sent, the sink refuses it again) replace their object rather than add one.
    A failed write raises a SinkError: the batch's state is then not committed, and it is retried.
    """

    def __init__(self, location: str, kms_key_id: Optional[str] = None, client: Any = None) -> None:
        from . import aws  # boto3 only where S3 is used: the Splunk add-on ships without it

        self.bucket, self.prefix = aws.parse_s3_uri(location, "FORWARDER_QUARANTINE")
        self.location = location
        self._kms_key_id = kms_key_id
        self._client = client or aws.client("s3")

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None:
        from . import aws

        if not rejections:
            return
        at_us = now_us()
        names = "\n".join([stream_key, *sorted(r.event.id for r in rejections)])
        key = (
            aws.s3_partition(self.prefix, at_us)
            + hashlib.sha256(names.encode("utf-8")).hexdigest()
            + ".ndjson"
        )
        lines = quarantine_lines(stream_key, rejections, at_us)
        try:
            aws.put_s3_ndjson(self._client, self.bucket, key, lines, False, self._kms_key_id)
        except aws.failures() as exc:
            raise aws.sink_error(
                exc, f"quarantining {len(rejections)} event(s) to s3://{self.bucket}/{key}"
            ) from exc

    def entries(self) -> Iterator[Entry]:
        paginator = self._client.get_paginator("list_objects_v2")
        prefix = f"{self.prefix}/" if self.prefix else ""
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                if not item["Key"][len(prefix) :].startswith("year="):  # a tenant's quarantine inside
                    continue
                body = self._client.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
                for line in body.splitlines():
                    if line.strip():
                        yield Entry(item["Key"], jsonutil.loads(line))

    def remove(self, where: str, event_ids: Set[str]) -> None:
        from . import aws

        body = self._client.get_object(Bucket=self.bucket, Key=where)["Body"].read()
        kept = [line for line in body.splitlines(keepends=True) if _entry_id(line) not in event_ids]
        if kept:
            aws.put_s3_ndjson(self._client, self.bucket, where, kept, False, self._kms_key_id)
        else:
            self._client.delete_object(Bucket=self.bucket, Key=where)


def open_quarantine(location: str, kms_key_id: Optional[str] = None) -> Quarantine:
    """An S3 quarantine for ``s3://bucket/prefix``, else a local one in the directory (``file://`` too)."""
    if location.lower().startswith("s3://"):
        return S3Quarantine(location, kms_key_id)
    if location.lower().startswith("file://"):
        location = location[len("file://") :]
    if not location:
        raise ValueError("FORWARDER_QUARANTINE: a directory or s3://bucket/prefix is required")
    return LocalQuarantine(location)
