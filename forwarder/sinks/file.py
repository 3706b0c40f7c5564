"""The file sink: appends NDJSON to a local file and fsyncs before a batch counts as delivered.

URI forms (FORWARDER_SINK):

* ``file:///var/log/emailauth/audit.ndjson`` (also ``file:/abs/path`` and ``file://localhost/abs/path``):
  an absolute path.
* ``file:out/audit.ndjson``: a path relative to the working directory when the sink is opened.

``file://host/...`` with any other host is refused (it would name a remote machine), as are a
query string and a fragment. Percent-escapes are decoded (``%20`` is a space). Parent directories
are created; a new file gets mode 0640 (before the umask). The file is only ever appended to, one
batch per write on an O_APPEND descriptor, fsynced before ``send`` returns. The proof of delivery is
that the fsynced bytes are in the file the path names: when the path no longer names the open file
(its directory removed, the file moved), the batch fails and the run with it. Rotate it by renaming it
between runs (each run opens the path again) or with copytruncate.
"""

from __future__ import annotations

import contextlib
import os
from typing import Optional, Sequence
from urllib.parse import urlsplit

from ..errors import SinkError
from ..events import Event, SendResult
from ..files import fsync_dir
from ..logs import quoted
from ..retry import RetryPolicy
from ..urls import local_path
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS, ndjson
from .settings import SinkSettings


def path_from_uri(uri: str) -> str:
    """The absolute path a ``file:`` URI names; ValueError naming FORWARDER_SINK otherwise."""
    if urlsplit(uri).scheme.lower() != "file":
        raise ValueError(f"FORWARDER_SINK {uri!r} is not a file: URI")
    try:
        path = local_path(uri)
    except ValueError as exc:
        raise ValueError(f"FORWARDER_SINK {quoted(uri)}: {exc}") from None
    if path.endswith("/"):
        raise ValueError(f"FORWARDER_SINK {quoted(uri)} must name a file, like file:///var/log/audit.ndjson")
    return os.path.abspath(path)


_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
_MODE = 0o640  # audit data: owner and group (a log shipper's) only, further narrowed by the umask


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class FileSink:
    name = "file"

    def __init__(
        self,
        path: str,
        max_batch_events: int = DEFAULT_MAX_EVENTS,
        max_batch_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.path = path
        self.max_batch_events = max_batch_events
        self.max_batch_bytes = max_batch_bytes
        self.max_in_flight = 1  # one file, appended in order
        self._fd: Optional[int] = self._open()

    def _open(self) -> int:
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            created = not os.path.exists(self.path)
            fd = os.open(self.path, _FLAGS, _MODE)
        except OSError as exc:
            raise SinkError(f"cannot open the sink file {self.path}: {exc.strerror or exc}") from exc
        if created:
            fsync_dir(directory, best_effort=True)
        return fd

    def send(self, batch: Sequence[Event]) -> SendResult:
        """Append the batch with one unbuffered write and fsync it before returning.

        The proof is the bytes fsynced in the file the path names: a file removed or renamed under
        the open descriptor (its directory deleted, a rotation) still takes writes and fsyncs, into a
        file nobody reads. So the path must name the descriptor's file before the write and after
        the fsync, or the batch fails (and is dropped from the file it went to, if any)."""
        fd = self._fd
        if fd is None:
            raise SinkError(f"the sink file {self.path} is closed")
        try:
            opened = os.fstat(fd)
            self._check_in_place(opened)
            try:
                _write_all(fd, ndjson(batch))
                os.fsync(fd)
                self._check_in_place(opened)
            except (OSError, SinkError):
                # Drop a half-written batch (a full disk), or one in a file the path no longer
                # names, so the re-sent batch follows no torn line and doubles nothing. Best effort:
                # the original error is the one worth reporting.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, opened.st_size)
                raise
        except OSError as exc:
            raise SinkError(f"cannot write to the sink file {self.path}: {exc.strerror or exc}") from exc
        return SendResult.all_delivered(len(batch))

    def _check_in_place(self, opened: os.stat_result) -> None:
        """SinkError unless the path still names the open file (``opened``: its fstat)."""
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            named = None
        if named is None or (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino):
            gone = "was removed" if named is None else "now names another file"
            raise SinkError(
                f"the sink file {self.path} {gone} while this run wrote to it (its directory deleted, "
                "or the file moved); nothing written since counts as delivered, and the next run "
                "opens the path again"
            )

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __repr__(self) -> str:
        return f"FileSink(path={self.path!r})"


def validate(settings: SinkSettings) -> None:
    path = path_from_uri(settings.uri)
    if os.path.isdir(path):
        raise ValueError(f"FORWARDER_SINK {settings.uri!r} is a directory; name a file in it")


def probe(settings: SinkSettings, retry_policy: Optional[RetryPolicy] = None) -> str:
    """The file is writable, or the nearest existing directory on its path is (the first write creates
    what is missing); nothing is created or written here (nor tried again: ``retry_policy`` is unused)."""
    path = path_from_uri(settings.uri)
    if os.path.exists(path):
        if not os.path.isfile(path) or not os.access(path, os.W_OK):
            raise SinkError(f"the sink file {path} is not a file this user can write; check FORWARDER_SINK")
        return f"file {path}: exists and is writable ({os.path.getsize(path):,} bytes)"
    directory = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(directory):
        directory = os.path.dirname(directory)
    if not os.path.isdir(directory):
        raise SinkError(
            f"cannot create the sink file {path}: {directory} is not a directory; check FORWARDER_SINK"
        )
    if not os.access(directory, os.W_OK | os.X_OK):
        raise SinkError(
            f"cannot create the sink file {path}: {directory} is not writable; check FORWARDER_SINK"
        )
    return f"file {path}: not there yet; {directory} is writable, so the first batch creates it"


def open_sink(settings: SinkSettings, retry_policy: Optional[RetryPolicy] = None) -> FileSink:
    """Writes to a local file: ``retry_policy`` has nothing to pace here."""
    return FileSink(
        path_from_uri(settings.uri),
        max_batch_events=settings.batch_events or DEFAULT_MAX_EVENTS,
        max_batch_bytes=settings.batch_bytes or DEFAULT_MAX_BYTES,
    )
