"""`quarantine replay` against a real loopback ``_bulk`` receiver: entries go again under their ids,
leave the quarantine only once the sink proved acceptance, and stay when refused again."""

from __future__ import annotations

import io
import json
import os
import threading

from forwarder import retry
from forwarder.errors import StateError
from forwarder.events import Event, Rejection
from forwarder.quarantine import LocalQuarantine, unplaceable
from forwarder.records import event_id
from forwarder.replay import list_entries, replay
from forwarder.sinks.elasticsearch import ElasticsearchSink
from forwarder.sinks.settings import SinkSettings
from tests.e2e.helpers import HEC_TOKEN, cli, cli_process, env_for, settings_for
from tests.fakes import NO_WAITS
from tests.receivers.bulk import BulkReceiver
from tests.receivers.hec import HecReceiver

STREAM = "user/alice@example.com"
INDEX = "logs-emailauth.audit-default"
GUARD_S = 120  # only a hang reaches this


def refused(n: int) -> Rejection:
    eid = f"{n:064x}"
    body = json.dumps({"@timestamp": "2026-01-02T03:04:05.000Z", "event": {"id": eid}, "n": n}).encode()
    return Rejection(Event(eid, 1_767_323_045_000_000, body), "mapper_parsing_exception: [n] ...")


def setup(tmp_path, receiver):
    quarantine = LocalQuarantine(str(tmp_path / "q"))
    settings = settings_for("http://127.0.0.1:9", receiver.url, str(tmp_path / "state"))
    token = receiver.encoded_api_key()
    sink = ElasticsearchSink(
        SinkSettings(uri=receiver.url, token=token), retry.RetryPolicy(attempts=2, sleep=NO_WAITS.sleep)
    )
    return quarantine, settings, sink


def test_replay_sends_each_entry_under_its_id_once_and_empties_the_quarantine(tmp_path):
    with BulkReceiver() as es:
        quarantine, settings, sink = setup(tmp_path, es)
        quarantine.keep(STREAM, [refused(1), refused(2)])
        record = {"user": "alice@example.com", "action": "login", "created_at": "2026-01-02T03:04:05Z"}
        quarantine.keep(STREAM, [unplaceable(record, "placed by a newer forwarder")])
        out = io.StringIO()
        assert list_entries(quarantine, out, False, [], []) == 3
        assert "mapper_parsing_exception" in out.getvalue() and '"n":' not in out.getvalue()

        outcome = replay(quarantine, sink, settings, [], [])
        assert (outcome.replayed, outcome.still_quarantined, outcome.error) == (3, [], None)
        assert sorted(es.ids(INDEX)) == sorted([f"{1:064x}", f"{2:064x}", event_id(record)])
        assert list(quarantine.entries()) == []
        again = replay(quarantine, sink, settings, [], [])  # nothing left: nothing sent twice
        assert again.replayed == 0 and len(es.ids(INDEX)) == 3


def test_entries_stay_until_the_sink_proves_acceptance(tmp_path):
    with BulkReceiver() as es:
        quarantine, settings, sink = setup(tmp_path, es)
        quarantine.keep(STREAM, [refused(1)])
        bad = {"user": "alice@example.com", "created_at": None}
        quarantine.keep(STREAM, [unplaceable(bad, "no created_at")])
        es.html_ok_next(2)  # a proxy answering 200 with a page, to both attempts: no proof
        outcome = replay(quarantine, sink, settings, [], [])
        assert outcome.replayed == 0 and "web page" in (outcome.error or "")
        assert [e["reason"] for e in outcome.still_quarantined] == [
            "still cannot be placed: audit record has no created_at string (got NoneType)"
        ]
        listed = {e.event_id: e.where for e in quarantine.entries()}
        assert [e["location"] for e in outcome.still_quarantined] == [
            listed[e["event_id"]] for e in outcome.still_quarantined
        ]
        assert len(list(quarantine.entries())) == 2 and es.ids(INDEX) == []
        only = replay(quarantine, sink, settings, [], [f"{1:064x}"])  # the proxy is gone now
        assert only.replayed == 1 and len(list(quarantine.entries())) == 1


class Unremovable(LocalQuarantine):
    """A quarantine whose entries cannot be removed (a read-only bucket or disk)."""

    def remove(self, where, event_ids):
        raise StateError(f"cannot rewrite {where}: read-only file system")


def test_an_accepted_entry_that_cannot_be_removed_ends_the_replay_with_the_reason(tmp_path):
    with BulkReceiver() as es:
        _, settings, sink = setup(tmp_path, es)
        quarantine = Unremovable(str(tmp_path / "q"))
        quarantine.keep(STREAM, [refused(1)])

        outcome = replay(quarantine, sink, settings, [], [])

        assert outcome.replayed == 0 and "read-only file system" in (outcome.error or "")
        assert len(list(quarantine.entries())) == 1  # sent again by the next replay, under the same id
        assert es.ids(INDEX) == [f"{1:064x}"]


def test_two_replays_at_once_send_each_entry_once(tmp_path):
    """The first replay is held inside its first request (the receiver has stored the batch and not yet
    answered) while a second replay runs from start to end: it must find the lease held and send nothing."""
    state = str(tmp_path / "state")
    with HecReceiver(token=HEC_TOKEN) as hec:
        env = {**env_for("http://127.0.0.1:9", hec.url, state), "FORWARDER_BATCH_EVENTS": "2"}
        LocalQuarantine(env["FORWARDER_QUARANTINE"]).keep(STREAM, [refused(n) for n in range(5)])
        arrived, go_on = threading.Event(), threading.Event()

        def hold_the_first(accepted: int) -> None:
            if accepted == 1:
                arrived.set()
                go_on.wait(GUARD_S)

        hec.after_accept = hold_the_first
        first = cli_process("quarantine", "replay", env=env)
        try:
            assert arrived.wait(GUARD_S), first.stderr.read() if first.stderr else ""
            second = cli("quarantine", "replay", env=env)
        finally:
            go_on.set()
            out, err = first.communicate(timeout=GUARD_S)

        assert second.returncode == 75, second.stdout + second.stderr
        assert "held by" in json.loads(second.stdout)["skipped"] and "Traceback" not in second.stderr
        assert first.returncode == 0 and json.loads(out)["replayed"] == 5, out + err
        assert sorted(hec.event_ids()) == [f"{n:064x}" for n in range(5)]  # each once
        assert not os.path.exists(os.path.join(state, ".lease"))  # released
