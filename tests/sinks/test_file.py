"""The file sink: NDJSON lines, durability, append, clear errors."""

from __future__ import annotations

import errno
import os
import shutil

import pytest

from forwarder.errors import SinkError
from forwarder.sinks import file as file_sink
from forwarder.sinks import open_sink
from forwarder.sinks.file import FileSink, path_from_uri
from forwarder.sinks.settings import SinkSettings
from tests.sinks.helpers import CEF, event


def test_file_sink_creates_directories_and_appends_across_runs(tmp_path):
    path = tmp_path / "deep" / "er" / "audit.ndjson"
    first = open_sink(SinkSettings(uri=path.as_uri()))
    first.send([event(1), event(2)])
    first.close()
    second = open_sink(SinkSettings(uri=path.as_uri()))
    second.send([CEF])
    second.send([event(3)])
    second.close()

    assert path.read_bytes().splitlines() == [event(1).body, event(2).body, CEF.body, event(3).body]


def test_send_returns_only_after_fsync_of_the_written_bytes(tmp_path, monkeypatch):
    path = tmp_path / "audit.ndjson"
    synced: list[tuple[int, bytes]] = []  # (inode synced, file content at that moment)
    real_fsync = os.fsync

    def spying_fsync(fd: int) -> None:
        real_fsync(fd)
        synced.append((os.fstat(fd).st_ino, path.read_bytes()))

    monkeypatch.setattr(file_sink.os, "fsync", spying_fsync)
    sink = FileSink(str(path))
    sink.send([event(1)])
    after_first = list(synced)
    sink.send([event(2)])

    inode = path.stat().st_ino
    assert after_first[-1] == (inode, event(1).body + b"\n")
    assert synced[-1] == (inode, event(1).body + b"\n" + event(2).body + b"\n")


def test_relative_file_uri_resolves_against_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sink = open_sink(SinkSettings(uri="file:out/audit.ndjson"))
    sink.send([event(1)])
    sink.close()

    assert (tmp_path / "out" / "audit.ndjson").read_bytes() == event(1).body + b"\n"


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///var/log/a.ndjson", "/var/log/a.ndjson"),
        ("file:/var/log/a.ndjson", "/var/log/a.ndjson"),
        ("file://localhost/var/log/a.ndjson", "/var/log/a.ndjson"),
        ("file:///var/log/with%20space.ndjson", "/var/log/with space.ndjson"),
    ],
)
def test_absolute_uris(uri, path):
    assert path_from_uri(uri) == path


@pytest.mark.parametrize(
    "uri", ["file://fileserver/share/a.ndjson", "file:///var/log/", "file:///a.ndjson?x=1", "file:"]
)
def test_bad_file_uris_name_the_variable(uri):
    with pytest.raises(ValueError, match="FORWARDER_SINK"):
        path_from_uri(uri)


def test_an_unwritable_path_is_a_sink_error_naming_it(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    target = blocker / "audit.ndjson"

    with pytest.raises(SinkError, match=str(target)):
        FileSink(str(target))


def test_a_closed_file_sink_refuses_to_send(tmp_path):
    sink = FileSink(str(tmp_path / "a.ndjson"))
    sink.close()
    sink.close()
    with pytest.raises(SinkError, match="closed"):
        sink.send([event(1)])


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "a.ndjson"
    sink = FileSink(str(path))
    sink.send([event(1)])

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(file_sink.os, "fsync", failing_fsync)
    with pytest.raises(SinkError, match=f"{path}: Input/output error"):
        sink.send([event(2)])

    assert path.read_bytes() == event(1).body + b"\n"


def test_a_file_whose_directory_is_removed_takes_no_batch(tmp_path):
    path = tmp_path / "out" / "a.ndjson"
    sink = FileSink(str(path))
    sink.send([event(1)])
    shutil.rmtree(path.parent)  # the open descriptor still writes and fsyncs, into an unlinked file

    with pytest.raises(SinkError, match=f"{path} was removed"):
        sink.send([event(2)])
    assert not path.parent.exists()  # not silently recreated: the run fails and says so


def test_a_file_moved_away_takes_no_batch_in_either_place(tmp_path):
    path = tmp_path / "a.ndjson"
    sink = FileSink(str(path))
    sink.send([event(1)])
    path.rename(tmp_path / "a.ndjson.1")  # a rotation without copytruncate, mid-run
    path.write_bytes(b"")

    with pytest.raises(SinkError, match=f"{path} now names another file"):
        sink.send([event(2)])
    assert (tmp_path / "a.ndjson.1").read_bytes() == event(1).body + b"\n"
    assert path.read_bytes() == b""


def test_a_file_removed_during_the_write_drops_the_batch(tmp_path, monkeypatch):
    path = tmp_path / "a.ndjson"
    sink = FileSink(str(path))
    sink.send([event(1)])
    real_fsync = os.fsync

    def fsync_then_remove(fd: int) -> None:
        real_fsync(fd)
        os.unlink(path)

    monkeypatch.setattr(file_sink.os, "fsync", fsync_then_remove)
    with pytest.raises(SinkError, match=f"{path} was removed"):
        sink.send([event(2)])
