from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import stat

import pytest

import forwarder.state as registry
from forwarder.errors import StateError
from forwarder.state import open_store
from forwarder.state.local import LocalStore, filename_to_key, key_to_filename
from forwarder.state.model import SCHEMA_VERSION, StreamState

from .contract import KEY, T0_US, UNICODE_KEYS, StoreContract, deliver_with_retries, delivered, make_record


class TestLocalStoreContract(StoreContract):
    @pytest.fixture
    def open_handle(self, tmp_path):
        directory = str(tmp_path / "state")
        return lambda clock: LocalStore(directory, clock=clock)


@pytest.fixture
def directory(tmp_path):
    return tmp_path / "state"


@pytest.fixture
def store(directory):
    return LocalStore(str(directory))


def state_file(directory, key):
    return directory / key_to_filename(key)


# -- file names ------------------------------------------------------------------------------


def test_file_names_are_safe_and_reversible():
    for key in UNICODE_KEYS:
        name = key_to_filename(key)
        assert set(name) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-%")
        assert not name.startswith(".")
        assert filename_to_key(name) == key
    assert key_to_filename("user/alice@example.com") == "user%2Falice%40example.com.json"


def test_shortened_names_are_the_ones_earlier_versions_wrote():
    long_key = "domain/" + "ü" * 300
    encoded = "domain%2F" + "%C3%BC" * 300
    digest = hashlib.sha256(long_key.encode()).hexdigest()[:32]
    assert key_to_filename(long_key) == f"{encoded[:200]}~{digest}.json"


def test_long_keys_get_short_distinct_names_and_keep_their_key(store, directory):
    long_a = "domain/" + "ü" * 300 + "a"
    long_b = "domain/" + "ü" * 300 + "b"
    store.commit(long_a, delivered(make_record("a", T0_US)), None)
    store.commit(long_b, delivered(make_record("b", T0_US)), None)
    names = [n for n in os.listdir(directory) if n.endswith(".json")]
    assert len(names) == 2
    assert all(len(n.encode()) <= 255 for n in names)
    assert store.keys() == sorted([long_a, long_b])
    assert set(store.load(long_b).state.seen) == {"b"}


def test_empty_key_is_refused(store):
    with pytest.raises(ValueError):
        store.commit("", StreamState(), None)


# -- documents and directory -----------------------------------------------------------------


def test_document_holds_the_stream_key_and_schema(store, directory):
    store.commit(KEY, delivered(make_record("a", T0_US)), None)
    doc = json.loads(state_file(directory, KEY).read_text("utf-8"))
    assert doc["stream"] == KEY
    assert doc["schema"] == SCHEMA_VERSION
    assert doc["revision"] == store.load(KEY).version


def test_directory_is_created_on_first_commit_with_private_modes(tmp_path):
    directory = tmp_path / "a" / "b"
    store = LocalStore(str(directory))
    assert store.load(KEY).version is None
    assert store.keys() == []
    store.delete(KEY)
    assert not (tmp_path / "a").exists()  # reading and resetting create nothing
    store.commit(KEY, StreamState(), None)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(state_file(directory, KEY).stat().st_mode) == 0o600


def test_location_is_the_absolute_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert LocalStore("state").location == str(tmp_path / "state")


# -- unreadable state is an error, never a reset ---------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b'{"schema": 1, "stream": "user/alice@example.com", "watermark": ',  # truncated
        b"\xff\xfe not utf-8",
        b"[1, 2, 3]",
        b'{"schema": 1, "stream": "user/alice@example.com"}',  # no revision
        b'{"schema": 1, "stream": "user/alice@example.com", "watermark": "yesterday", "revision": "r"}',
    ],
)
def test_corrupt_document_raises_state_error_naming_the_file(store, directory, content):
    store.commit(KEY, StreamState(), None)
    path = state_file(directory, KEY)
    path.write_bytes(content)
    with pytest.raises(StateError) as err:
        store.load(KEY)
    assert str(path) in str(err.value)
    with pytest.raises(StateError):  # a commit never overwrites what it could not read
        store.commit(KEY, StreamState(), None)
    assert path.read_bytes() == content


def test_wrong_schema_version_raises_state_error(store, directory):
    store.commit(KEY, StreamState(), None)
    path = state_file(directory, KEY)
    doc = json.loads(path.read_text("utf-8"))
    doc["schema"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(StateError, match="schema version") as err:
        store.load(KEY)
    assert str(path) in str(err.value)


def test_document_of_another_stream_is_refused(store, directory):
    store.commit("user/bob@example.com", StreamState(), None)
    os.replace(state_file(directory, "user/bob@example.com"), state_file(directory, KEY))
    with pytest.raises(StateError, match="bob"):
        store.load(KEY)


def test_unreadable_path_raises_state_error(store, directory):
    state_file(directory, KEY).mkdir(parents=True)
    with pytest.raises(StateError) as err:
        store.load(KEY)
    assert key_to_filename(KEY) in str(err.value)


def test_corrupt_lease_raises_state_error(store, directory):
    directory.mkdir()
    (directory / ".lease").write_text("{}", "utf-8")
    with pytest.raises(StateError, match=r"\.lease"):
        store.acquire_lease("run-a", 60)


def test_state_reset_removes_a_corrupt_document(store, directory):
    store.commit(KEY, StreamState(), None)
    state_file(directory, KEY).write_bytes(b"garbage")
    store.delete(KEY)
    assert store.load(KEY).version is None


# -- crashes and other processes -------------------------------------------------------------


def _die_before_rename(directory: str, key: str) -> None:
    def exit_now(*_args):
        os._exit(17)  # the process dies after writing the temp file, before it replaces anything

    store = LocalStore(directory)
    loaded = store.load(key)
    os.replace = exit_now
    store.commit(key, delivered(make_record("lost", T0_US + 1), base=loaded.state), loaded.version)


def _commit_loop(directory: str, worker: str, commits: int) -> int:
    store = LocalStore(directory)
    return sum(deliver_with_retries(store, make_record(f"{worker}-{n}", T0_US + n)) for n in range(commits))


SPAWN = multiprocessing.get_context("spawn")  # no fork of a process that runs threads


def test_crash_between_write_and_rename_keeps_the_previous_document(store, directory):
    before = delivered(make_record("a", T0_US))
    version = store.commit(KEY, before, None)
    child = SPAWN.Process(target=_die_before_rename, args=(str(directory), KEY))
    child.start()
    child.join()
    assert child.exitcode == 17
    assert [n for n in os.listdir(directory) if n.startswith(".tmp-")]  # the write did happen
    assert store.load(KEY).state == before
    assert store.load(KEY).version == version
    assert store.keys() == [KEY]
    store.commit(KEY, delivered(make_record("b", T0_US + 2), base=before), version)  # lock was freed
    assert set(store.load(KEY).state.seen) == {"a", "b"}


def test_processes_racing_commits_lose_no_update(store):
    workers, commits_each = 3, 15
    with SPAWN.Pool(workers) as pool:
        pool.starmap(_commit_loop, [(store.location, f"p{n}", commits_each) for n in range(workers)])
    final = store.load(KEY).state
    assert final.delivered_total == workers * commits_each
    assert len(final.seen) == workers * commits_each


# -- registry --------------------------------------------------------------------------------


def test_open_store_takes_a_path_or_a_file_uri(tmp_path):
    target = tmp_path / "my state"
    for location in (str(target), "file://" + str(target).replace(" ", "%20"), f"file://localhost{target}"):
        store = open_store(location)
        assert isinstance(store, LocalStore)
        assert store.location == str(target)


@pytest.mark.parametrize("location", ["file://otherhost/state", "gopher://state", ""])
def test_open_store_refuses_unusable_locations(location):
    with pytest.raises(ValueError):
        open_store(location)


def test_open_store_reports_a_backend_missing_from_the_build(monkeypatch):
    monkeypatch.setitem(registry.STORES._modules, "s3", "forwarder.state.no_such_backend")
    with pytest.raises(ValueError, match="not available in this build") as err:
        open_store("s3://bucket/prefix")
    assert "s3://bucket/prefix" in str(err.value)
