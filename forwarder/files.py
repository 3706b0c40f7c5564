"""Local files: a whole file read in few system calls, and durable writes: an atomic replacement, and
the directory fsync that makes a new or renamed entry itself survive a crash (the local state store,
the file sink, the local quarantine)."""

from __future__ import annotations

import contextlib
import os
import secrets

TMP_PREFIX = ".tmp-"  # a write in progress; one left behind by a killed process is never read
_CHUNK = 1 << 16


def read_file(path: str) -> bytes:
    """The whole of ``path``: open, read to the end, close. Each system call lets go of the GIL, and
    in a run's stream threads each may wait to get it back; ``open()``'s file object makes five more
    (two fstat, an isatty ioctl, two lseek). Raises OSError."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))  # (Windows would translate newlines)
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a reader sees the old or the new file, never a part;
    ``durable``: the new file and its directory entry are on disk when this returns.

    Raises OSError; the temporary file never outlives a failure (or an interrupt)."""
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, TMP_PREFIX + secrets.token_hex(8))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if durable:
            fsync_dir(directory)
    except BaseException:  # also KeyboardInterrupt: never leave the temp file behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def fsync_dir(directory: str, best_effort: bool = False) -> None:
    """Make a rename, unlink or new file in ``directory`` durable, not only the file contents.

    Raises OSError, unless ``best_effort``: then a directory that cannot be opened (Windows, whose
    file system journals the entry) or fsynced (some file systems refuse it: EINVAL) is let be."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        if best_effort:
            return
        raise
    try:
        with contextlib.suppress(*((OSError,) if best_effort else ())):
            os.fsync(fd)
    finally:
        os.close(fd)
