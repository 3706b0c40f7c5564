"""Where events a sink refused for good are kept, with the reason, so nothing is silently dropped.

``FORWARDER_QUARANTINE`` is a directory (CLI, containers) or ``s3://bucket/prefix`` (Lambda, whose disk
does not outlive the invocation). Both keep one JSON line per event: when, which stream, the event id,
the reason and the event as it was formatted.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any, List, Optional, Protocol, Sequence

from . import jsonutil
from .events import Event, Rejection
from .timeutil import format_us, now_us


class Quarantine(Protocol):
    location: str

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None: ...


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
        self._lock = threading.Lock()

    def keep(self, stream_key: str, rejections: Sequence[Rejection]) -> None:
        if not rejections:
            return
        lines = quarantine_lines(stream_key, rejections, now_us())
        with self._lock:
            Path(self.location).parent.mkdir(parents=True, exist_ok=True)
            with open(self.location, "ab") as fh:
                fh.writelines(lines)
                fh.flush()
                os.fsync(fh.fileno())


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
        from .sinks.s3 import aws_error, partition, put_ndjson

        if not rejections:
            return
        at_us = now_us()
        names = "\n".join([stream_key, *sorted(r.event.id for r in rejections)])
        key = partition(self.prefix, at_us) + hashlib.sha256(names.encode("utf-8")).hexdigest() + ".ndjson"
        lines = quarantine_lines(stream_key, rejections, at_us)
        try:
            put_ndjson(self._client, self.bucket, key, lines, False, self._kms_key_id)
        except aws.failures() as exc:
            raise aws_error(
                exc, f"quarantining {len(rejections)} event(s) to s3://{self.bucket}/{key}"
            ) from exc


def open_quarantine(location: str, kms_key_id: Optional[str] = None) -> Quarantine:
    """An S3 quarantine for ``s3://bucket/prefix``, else a local one in the directory (``file://`` too)."""
    if location.lower().startswith("s3://"):
        return S3Quarantine(location, kms_key_id)
    if location.lower().startswith("file://"):
        location = location[len("file://") :]
    if not location:
        raise ValueError("FORWARDER_QUARANTINE: a directory or s3://bucket/prefix is required")
    return LocalQuarantine(location)
