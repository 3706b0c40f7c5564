"""The quarantine in a directory (CLI, containers): ``<directory>/quarantine.ndjson``, appended to
under a lock and fsynced, and rewritten atomically when replayed entries leave it."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Iterator, Sequence, Set

from ..errors import StateError
from ..events import Rejection
from ..files import fsync_dir, write_atomic
from ..timeutil import now_us
from ..urls import local_path
from .entries import Entry, quarantine_lines, read_entries, without
from .place import QuarantinePlace

try:  # POSIX: a run appending and a replay removing, in two processes, take turns
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process at a time
    fcntl = None  # type: ignore[assignment]


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
            data = self._read()
        except OSError as exc:
            raise StateError(f"cannot read {self.location}: {exc.strerror or exc}") from None
        yield from read_entries(data, self.location)

    def remove(self, where: str, event_ids: Set[str]) -> None:
        try:
            with self._locked():  # re-read under the lock: entries kept meanwhile stay
                data = self._read()
                if data:
                    write_atomic(self.location, b"".join(without(data, event_ids)))
        except OSError as exc:
            raise StateError(f"cannot rewrite {self.location}: {exc.strerror or exc}") from None

    def _read(self) -> bytes:
        try:
            with open(self.location, "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return b""

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


def open_at(place: QuarantinePlace) -> LocalQuarantine:
    """A directory path or ``file://`` one (a local file needs no key and no timeout)."""
    return LocalQuarantine(local_path(place.location))
