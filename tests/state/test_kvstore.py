"""The KV store state store against the fake splunkd over HTTPS: the shared contract plus specifics."""

from __future__ import annotations

import json

import pytest

from forwarder.config import load_settings
from forwarder.errors import ConfigError, ConflictError, StateError
from forwarder.state import open_store
from forwarder.state.kvstore import KVStore, Splunkd, open_kvstore
from tests.e2e.helpers import cli
from tests.splunk.fake_splunkd import SESSION_KEY, FakeSplunkd
from tests.state.contract import KEY, T0_US, StoreContract, delivered, make_record

APP = "TA-test"
COLLECTION = "checkpoints"


@pytest.fixture(scope="module")
def splunkd(tmp_path_factory):
    with FakeSplunkd(APP, tmp_path_factory.mktemp("certs")) as fake:
        yield fake


@pytest.fixture
def collection(splunkd):
    splunkd.collections[COLLECTION] = {}
    yield splunkd.collections[COLLECTION]
    del splunkd.collections[COLLECTION]


def location(splunkd, scope: str = "input-1") -> str:
    return f"kvstore://{splunkd.url.split('://')[1]}/{APP}/{COLLECTION}/{scope}"


class TestKVStoreContract(StoreContract):
    @pytest.fixture
    def open_handle(self, splunkd, collection):
        return lambda clock: open_kvstore(location(splunkd), SESSION_KEY, clock=clock)


def test_registry_opens_kvstore_locations_with_the_token_of_the_settings(splunkd, collection, monkeypatch):
    # The environment is read once, by load_settings: the store itself never looks there.
    monkeypatch.setenv("FORWARDER_SPLUNK_TOKEN", "wrong-key")
    env = {
        "FORWARDER_API_URL": "https://api.example.com",
        "FORWARDER_CLIENT_ID": "id",
        "FORWARDER_CLIENT_SECRET": "secret",
        "FORWARDER_STATE": location(splunkd),
        "FORWARDER_SPLUNK_TOKEN": SESSION_KEY,
    }
    settings = load_settings(env)
    assert SESSION_KEY not in repr(settings) and SESSION_KEY in settings.secrets()
    store = open_store(settings.state, settings.splunk_token)
    assert isinstance(store, KVStore) and SESSION_KEY not in repr(store)
    store.commit(KEY, delivered(make_record("a", T0_US)), None)
    assert store.keys() == [KEY]
    with pytest.raises(ValueError, match="FORWARDER_SPLUNK_TOKEN"):
        open_store(location(splunkd))  # the environment's token is not picked up behind the caller's back


def test_a_kvstore_state_without_a_token_is_a_configuration_problem(monkeypatch):
    monkeypatch.setenv("FORWARDER_SPLUNK_TOKEN", SESSION_KEY)  # not the env given: not read
    env = {
        "FORWARDER_API_URL": "https://api.example.com",
        "FORWARDER_CLIENT_ID": "id",
        "FORWARDER_CLIENT_SECRET": "secret",
        "FORWARDER_STATE": "kvstore://127.0.0.1:8089/a/b/c",
    }
    with pytest.raises(ConfigError, match="FORWARDER_SPLUNK_TOKEN: required for a kvstore://"):
        load_settings(env)


@pytest.mark.parametrize(
    "bad",
    [
        "kvstore://host:8089/app/collection",
        "kvstore:///a/b/c",
        "kvstore://h:1/a/b/c?x=1",
        "kvstore://h:1/a//c",
    ],
)
def test_bad_locations_are_refused(bad):
    with pytest.raises(ValueError, match="must look like kvstore://host:8089/<app>/<collection>/<scope>"):
        open_kvstore(bad, "token")


def test_a_missing_token_is_refused_naming_the_variable():
    with pytest.raises(ValueError, match="FORWARDER_SPLUNK_TOKEN"):
        open_kvstore("kvstore://127.0.0.1:8089/a/b/c")


def test_state_show_reads_the_kv_store_with_the_token_of_its_settings(splunkd, collection, tmp_path):
    open_kvstore(location(splunkd), SESSION_KEY).commit(KEY, delivered(make_record("a", T0_US)), None)
    env = {"FORWARDER_STATE": location(splunkd), "FORWARDER_LOG_FORMAT": "json"}
    shown = cli("state", "show", env={**env, "FORWARDER_SPLUNK_TOKEN": SESSION_KEY}, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert [s["stream"] for s in json.loads(shown.stdout)["streams"]] == [KEY]
    assert SESSION_KEY not in shown.stdout + shown.stderr
    missing = cli("state", "show", env=env, cwd=tmp_path)
    assert missing.returncode == 2 and "FORWARDER_SPLUNK_TOKEN" in missing.stderr


def test_scopes_are_separate_and_drop_removes_only_its_own(splunkd, collection):
    one = open_kvstore(location(splunkd, "one"), SESSION_KEY)
    two = open_kvstore(location(splunkd, "two"), SESSION_KEY)
    one.commit(KEY, delivered(make_record("a", T0_US)), None)
    two.commit(KEY, delivered(make_record("b", T0_US)), None)
    one.acquire_lease("run-a", 60)
    two.acquire_lease("run-b", 60)  # a lease per scope
    one.drop()
    assert one.keys() == [] and one.load(KEY).version is None
    assert set(two.load(KEY).state.seen) == {"b"}


def test_partitions_of_a_scope_are_separate_and_dropped_together(splunkd, collection):
    def part(name: str) -> KVStore:
        return KVStore(Splunkd(splunkd.url, APP, COLLECTION, SESSION_KEY), "input-9", partition=name)

    part("tenant-a").commit(KEY, delivered(make_record("a", T0_US)), None)
    assert part("tenant-b").keys() == [] and part("tenant-b").load(KEY).version is None
    assert part("tenant-a").keys() == [KEY]
    part("tenant-b").drop()
    assert part("tenant-a").keys() == []


def commit_five(store) -> None:
    version = None
    for n in range(5):
        version = store.commit(KEY, delivered(make_record(f"e{n}", T0_US + n)), version)


def test_superseded_records_stay_for_the_grace_period_then_go(splunkd, collection):
    commit_five(open_kvstore(location(splunkd, "kept"), SESSION_KEY))
    assert len(collection) == 5  # their numbers stay taken against slow writers
    commit_five(KVStore(Splunkd(splunkd.url, APP, COLLECTION, SESSION_KEY), "swept", grace_s=0))
    assert len([r for r in collection.values() if r["scope"] == "swept"]) == 1


def test_a_stale_writer_conflicts_while_the_newer_record_exists(splunkd, collection):
    store = open_kvstore(location(splunkd), SESSION_KEY)
    first = store.commit(KEY, delivered(make_record("a", T0_US)), None)
    store.commit(KEY, delivered(make_record("b", T0_US + 1)), first)
    with pytest.raises(ConflictError):
        store.commit(KEY, delivered(make_record("c", T0_US + 2)), first)
    assert set(store.load(KEY).state.seen) == {"b"}


def test_wrong_session_key_and_missing_collection_are_clear_errors(splunkd, collection):
    with pytest.raises(StateError, match="refused access to KV store collection checkpoints"):
        open_kvstore(location(splunkd), "wrong-key").load(KEY)
    with pytest.raises(StateError, match="collection nothere does not exist"):
        KVStore(Splunkd(splunkd.url, APP, "nothere", SESSION_KEY), "s").load(KEY)


def test_an_unreadable_record_is_an_error_naming_it(splunkd, collection):
    store = open_kvstore(location(splunkd), SESSION_KEY)
    store.commit(KEY, delivered(make_record("a", T0_US)), None)
    for record in collection.values():
        record["doc"] = "{not json"
    with pytest.raises(
        StateError, match=r"kvstore://127\.0\.0\.1:.*/checkpoints/input-1/streams.*unreadable"
    ):
        store.load(KEY)


def test_splunkd_down_is_a_state_error():
    with pytest.raises(StateError, match="cannot reach splunkd"):
        KVStore(Splunkd("https://127.0.0.1:9", APP, COLLECTION, SESSION_KEY), "s").load(KEY)


def test_a_stop_mid_run_releases_the_lease_and_the_next_run_sends_the_rest_once(
    splunkd, collection, tmp_path
):
    """SIGTERM from splunkd (an input disabled) after the first batch: the run ends clean, its lease
    released; the next run is not refused and sends what is left, nothing twice."""
    from forwarder import stop
    from forwarder.app import run_once
    from forwarder.sim.generate import generate_org
    from forwarder.sim.simulator import Simulator
    from tests.e2e.helpers import settings_for
    from tests.fakes import MemorySink

    class StopAfterFirstBatch(MemorySink):
        def send(self, batch):
            result = super().send(batch)
            if self.calls == 1:
                stop.request()  # what the installed SIGTERM handler does
            return result

    with Simulator(generate_org(2)) as sim:
        settings = settings_for(sim.base_url, "stdout", str(tmp_path / "state"), FORWARDER_CONCURRENCY="1")
        store = open_kvstore(location(splunkd), SESSION_KEY)
        sink = StopAfterFirstBatch(max_batch_events=50)
        try:
            first = run_once(settings, store=store, sink=sink)
        finally:
            stop.reset()
        assert first.ok and first.not_started
        second = run_once(settings, store=store, sink=sink)
        assert second.ok and not second.skip_reason and not second.not_started
    assert (
        len(sink.delivered)
        == len(set(sink.delivered))
        == first.totals()["shipped"] + second.totals()["shipped"]
    )
