"""forwarder/files.py: whole reads, atomic replacement and directory fsync, strict or best effort."""

from __future__ import annotations

import os

import pytest

from forwarder import files


def test_read_file_reads_the_whole_file_in_chunks_and_always_closes_it(tmp_path):
    long, empty = tmp_path / "long.json", tmp_path / "empty.json"
    data = os.urandom(3 * files._CHUNK + 7)  # more than one read
    long.write_bytes(data)
    empty.write_bytes(b"")
    open_before = len(os.listdir("/proc/self/fd"))
    assert files.read_file(str(long)) == data
    assert files.read_file(str(empty)) == b""
    with pytest.raises(FileNotFoundError):
        files.read_file(str(tmp_path / "missing"))
    with pytest.raises(IsADirectoryError):  # opened, refused at the first read, and closed
        files.read_file(str(tmp_path))
    assert len(os.listdir("/proc/self/fd")) == open_before


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "doc.json"
    path.write_bytes(b"old")
    files.write_atomic(str(path), b"new")
    assert path.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["doc.json"]


def test_a_failed_write_atomic_keeps_the_old_file_and_removes_its_temporary(tmp_path, monkeypatch):
    path = tmp_path / "doc.json"
    path.write_bytes(b"old")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        files.write_atomic(str(path), b"new")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["doc.json"]


def test_fsync_dir_is_strict_unless_asked_for_best_effort(tmp_path, monkeypatch):
    files.fsync_dir(str(tmp_path))
    with pytest.raises(OSError):
        files.fsync_dir(str(tmp_path / "missing"))
    files.fsync_dir(str(tmp_path / "missing"), best_effort=True)

    def refuse(fd: int) -> None:
        raise OSError(22, "Invalid argument")  # a file system that refuses fsync on a directory

    monkeypatch.setattr(files.os, "fsync", refuse)
    with pytest.raises(OSError, match="Invalid argument"):
        files.fsync_dir(str(tmp_path))
    files.fsync_dir(str(tmp_path), best_effort=True)
