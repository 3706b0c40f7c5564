"""State in a local directory: one JSON file per stream, replaced atomically under a lock.

Layout of the directory:

* ``<encoded key>.json`` - one stream's state. The key is percent-encoded (everything but
  ``A-Za-z0-9._-``, and a leading dot) so any Unicode key gives a safe, reversible name. A name
  that would pass 255 bytes is cut and gets ``~<hash>`` (``names.bounded``); ``~`` never appears in a
  plain encoding, so the two kinds cannot collide, and ``keys()`` reads such a key from the document.
* ``.lock`` - taken with ``flock`` around every read-compare-replace, which excludes other
  processes and other threads alike (each lock holder opens the file on its own).
* ``.lease`` - the run lease. Removing it by hand breaks a lease whose run is known to be gone.
* ``.scheduler`` - what the scheduler remembers between runs (``forwarder.scheduling``).
* ``.delivered-ids`` - the event ids delivered lately, over every stream (``state.delivered``).
* ``.pending-objects`` - the objects of batches a sink has yet to confirm (``delivery.journal``).
* ``.tmp-*`` - a write in progress; one left behind by a killed process is never read.

Each document carries a random ``revision``: that is the version a commit must present. A random
token rather than a counter, so a stream reset and recreated never matches a stale version.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import socket
import time
from contextlib import contextmanager, suppress
from typing import Any, Callable, ContextManager, Dict, Iterator, Optional, Tuple
from urllib.parse import unquote

from ..errors import ConflictError, StateError
from ..files import fsync_dir, read_file, write_atomic
from ..jsonutil import dumps, loads
from ..urls import local_path
from .lease import SlotLease, acquire
from .model import StreamState
from .names import bounded, is_bounded
from .slots import commit_stream, load_stream, stored_key
from .store import Loaded, StorePlace

_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SUFFIX = ".json"
_MAX_NAME = 255  # bytes, the usual file-name limit
_MARK = "~"  # of a shortened name (names.bounded): the encoding escapes it
_REVISION = "revision"
_LOCK = ".lock"
_LEASE = ".lease"
_FIX = "repair or remove the file (state reset)"


def key_to_filename(key: str) -> str:
    if not key:
        raise ValueError("a stream key must not be empty")
    data = key.encode("utf-8")
    encoded = "".join(
        chr(b) if b in _PLAIN and not (i == 0 and b == ord(".")) else f"%{b:02X}" for i, b in enumerate(data)
    )
    return bounded(encoded, key, _MAX_NAME - len(_SUFFIX), _MARK) + _SUFFIX


def filename_to_key(name: str) -> Optional[str]:
    """The key a file name encodes; None when only the document knows it (a shortened name)."""
    if is_bounded(name, _MARK):
        return None
    try:
        return unquote(name[: -len(_SUFFIX)], errors="strict")
    except UnicodeDecodeError:  # not a name this store wrote
        return None


class _FileSlot:
    """One document file, put and deleted by compare-and-swap on its ``revision``; ``durable``: each
    change is synced to disk before it returns."""

    def __init__(self, path: str, locked: Callable[[], ContextManager[None]], durable: bool = True) -> None:
        self.location = path
        self._locked = locked
        self._durable = durable

    def read(self) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        path = self.location
        try:
            data = read_file(path)
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            raise StateError(f"cannot read state file {path}: {exc.strerror or exc}") from None
        try:
            doc = loads(data)
        except ValueError as exc:
            raise StateError(f"state file {path} is not valid JSON ({exc}); {_FIX}") from None
        if not isinstance(doc, dict):
            raise StateError(f"state file {path} does not hold a JSON object; {_FIX}")
        version = doc.pop(_REVISION, None)
        if not isinstance(version, str):
            raise StateError(f"state file {path} has no revision; {_FIX}")
        return doc, version

    def put(self, doc: Dict[str, Any], expected: Optional[str]) -> str:
        with self._locked():
            self._check(expected)
            version = secrets.token_hex(8)
            _write(self.location, dumps({**doc, _REVISION: version}), durable=self._durable)
            return version

    def delete(self, expected: str) -> None:
        with self._locked():
            self._check(expected)
            _remove(self.location, durable=self._durable)

    def _check(self, expected: Optional[str]) -> None:
        _, current = self.read()
        if current != expected:
            raise ConflictError(
                f"{self.location} was changed by another writer "
                f"(expected revision {expected or 'none'}, found {current or 'none'})"
            )


class LocalStore:
    """A ``StateStore`` in a directory, created (mode 0700) on the first write."""

    def __init__(self, directory: str, clock: Callable[[], float] = time.time) -> None:
        self.location = os.path.abspath(directory)
        self._clock = clock

    def __repr__(self) -> str:
        return f"LocalStore({self.location!r})"

    def load(self, key: str) -> Loaded:
        return load_stream(self._slot(key), key)

    def commit(self, key: str, state: StreamState, version: Optional[str]) -> str:
        return commit_stream(self._slot(key), key, state, version)

    def keys(self) -> list[str]:
        try:
            names = os.listdir(self.location)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StateError(f"cannot list state directory {self.location}: {exc.strerror or exc}") from None
        found = []
        for name in names:
            if not name.endswith(_SUFFIX) or name.startswith("."):
                continue
            key = filename_to_key(name)
            if key is None:
                key = stored_key(self._file(name))
            if key is not None:
                found.append(key)
        return sorted(found)

    def delete(self, key: str) -> None:
        path = self._slot(key).location
        if not os.path.lexists(path):
            return  # nothing to reset; also keeps a missing directory missing
        with self._locked():
            _remove(path)

    def acquire_lease(self, owner: str, ttl_seconds: int) -> SlotLease:
        # Not synced to disk: a lease only means something while its holder lives, and a crash that
        # could lose the write (the machine's) ends the holder too. Two syncs less on every run.
        lease = _FileSlot(os.path.join(self.location, _LEASE), self._locked, durable=False)
        return acquire(lease, owner, ttl_seconds, self._clock, holder_gone=_process_gone)

    def slot(self, name: str) -> _FileSlot:
        """A small document of the run beside the state (``.<name>``, never listed as a stream)."""
        return self._file("." + name)

    def _file(self, name: str) -> _FileSlot:
        return _FileSlot(os.path.join(self.location, name), self._locked)

    def _slot(self, key: str) -> _FileSlot:
        return self._file(key_to_filename(key))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        path = os.path.join(self.location, _LOCK)
        try:
            _make_dirs(self.location)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StateError(f"cannot open state lock {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock


def open_local(location: str) -> LocalStore:
    """A plain directory path or a ``file://`` URI (``file:///abs/path``, ``file://localhost/...``)."""
    return LocalStore(os.path.expanduser(local_path(location)))


def open_at(place: StorePlace) -> LocalStore:
    return open_local(place.location)


def _make_dirs(path: str) -> None:
    # os.makedirs gives only the last directory the requested mode; every new one gets 0700 here.
    if os.path.isdir(path):
        return
    _make_dirs(os.path.dirname(path))
    with suppress(FileExistsError):  # another process made it meanwhile
        os.mkdir(path, 0o700)


def _write(path: str, data: bytes, durable: bool) -> None:
    try:
        write_atomic(path, data, durable=durable)
    except OSError as exc:
        raise StateError(f"cannot write state file {path}: {exc.strerror or exc}") from None


def _remove(path: str, durable: bool = True) -> None:
    try:
        os.unlink(path)
        if durable:
            fsync_dir(os.path.dirname(path))
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StateError(f"cannot remove state file {path}: {exc.strerror or exc}") from None


def _process_gone(owner: str) -> bool:
    """True when ``owner`` (host:pid:random) names a process on this host that no longer exists."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    return False
