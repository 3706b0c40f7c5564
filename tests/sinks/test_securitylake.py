"""The Security Lake sink against the moto server over loopback HTTP: the custom sources' partition
layout, one OCSF class per object, Parquet read back and every row valid OCSF 1.3 (the version the
rows declare, one Security Lake's custom sources take), every column a later row holds kept, and a
batch counted delivered only on every object's ETag; and, as a property over runs through a front
that stages S3's faults (tests/receivers/s3_front.py), every record as exactly one row."""

from __future__ import annotations

import io
import itertools
import json
import re
from collections import Counter
from urllib.parse import urlsplit

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwarder.errors import SinkError
from forwarder.events import Event
from forwarder.normalize.ocsf import format_ocsf
from forwarder.normalize.ocsf_1_3 import downgrade
from forwarder.pipeline import run_streams
from forwarder.quarantine import LocalQuarantine
from forwarder.reading.select import Limits
from forwarder.records import event_id
from forwarder.report import RunReport
from forwarder.sinks import open_sink, probe_sink, sink_problems
from forwarder.sinks.parquet import to_parquet, with_json_text
from forwarder.sinks.securitylake import (
    JSON_PATHS,
    MAX_SOURCE_NAME,
    SOURCES,
    SecurityLakeOptions,
    SecurityLakeSink,
    parse_uri,
    rows_by_object,
    source_names,
)
from forwarder.sinks.settings import SinkSettings
from forwarder.streams import Stream
from forwarder.timeutil import from_us, now_us
from tests.fakes import MemoryStore
from tests.normalize import API_ACTIONS, OPTIONS, audit_record, golden_cases, golden_records, json_like
from tests.normalize.ocsf_check import OCSF_1_3, OcsfSchema
from tests.pipeline.test_delivery_property import USERS, ListSource, make_records, run_context
from tests.receivers.s3_front import S3Front
from tests.sinks.helpers import NoEtag, as_written, lake_objects, only_rejection, sink_settings

pq = pytest.importorskip("pyarrow.parquet")

LAKE = "aws-security-data-lake-us-east-1-abc"
URI = f"securitylake://{LAKE}/ext/emailauth"
KEY = re.compile(
    r"^ext/emailauth-(?P<suffix>auth|account|access|entity)/region=us-east-1/accountId=external/"
    r"eventDay=(?P<day>\d{8})/[0-9a-f]{64}\.zstd\.parquet$"
)
SUFFIX_OF = {suffix: class_uid for class_uid, (suffix, _) in SOURCES.items()}
OCSF13 = OcsfSchema(OCSF_1_3)


def day(time_us: int) -> str:
    return from_us(time_us).strftime("%Y%m%d")


def golden_events():
    return [format_ocsf(record, OPTIONS) for case in golden_cases() for record in golden_records(case)]


@pytest.fixture
def lake(aws):
    boto3.client("s3").create_bucket(Bucket=LAKE)
    return LAKE


def test_every_class_and_day_of_a_batch_is_one_object_under_the_custom_sources_layout(lake):
    events = golden_events()

    result = open_sink(SinkSettings(uri=URI)).send(events)

    assert result.delivered == len(events) and not result.rejected
    written = lake_objects(lake)
    for key, rows in written.items():
        found = KEY.match(key)
        assert found, key
        assert {row["class_uid"] for row in rows} == {SUFFIX_OF[found["suffix"]]}, "one class per object"
        assert {day(row["time"] * 1000) for row in rows} == {found["day"]}, "the record's UTC day"
        assert [row["time"] for row in rows] == sorted(row["time"] for row in rows)
    expected = {(json.loads(e.body)["class_uid"], day(e.time_us)) for e in events}
    assert len(written) == len(expected)
    assert sorted(row["metadata"]["uid"] for rows in written.values() for row in rows) == sorted(
        e.id for e in events
    )


def test_every_row_read_back_is_valid_ocsf_1_3(lake):
    SecurityLakeSink(SinkSettings(uri=URI)).send(golden_events())

    rows = [row for rows in lake_objects(lake).values() for row in rows]
    assert rows
    for row in rows:
        assert row["metadata"]["version"] == "1.3.0"
        assert OCSF13.check_event(row) == [], row["metadata"]["uid"]


def test_a_column_only_a_later_row_holds_is_kept(lake):
    """Two account changes of one day: only the second renames the user, so only it has
    user_result.full_name; a schema taken from the first row alone would drop the column."""
    plain = format_ocsf(
        audit_record("user.update", "admin@example.com", "bob@example.com", {"phone": ["1", "2"]}, "user"),
        OPTIONS,
    )
    renamed = format_ocsf(
        audit_record(
            "user.update",
            "admin@example.com",
            "carol@example.com",
            {"full_name": ["Carol", "Carol Smith"]},
            "user",
            created_at="2026-01-02T03:04:06Z",
        ),
        OPTIONS,
    )

    SecurityLakeSink(SinkSettings(uri=URI)).send([plain, renamed])

    ((key, rows),) = lake_objects(lake).items()
    assert key.startswith("ext/emailauth-account/")
    assert [row["metadata"]["uid"] for row in rows] == [plain.id, renamed.id]
    assert "full_name" not in rows[0]["user_result"]
    assert rows[1]["user_result"]["full_name"] == "Carol Smith"


def test_a_resent_batch_overwrites_its_objects(lake):
    sink = SecurityLakeSink(SinkSettings(uri=URI))
    events = golden_events()[:6]
    sink.send(events)
    first = sorted(lake_objects(lake))

    sink.send(list(reversed(events)))

    assert sorted(lake_objects(lake)) == first


def test_objects_are_encrypted_as_asked(lake):
    sink = SecurityLakeSink(SinkSettings(uri=URI))
    sink.send(golden_events()[:1])
    (key,) = lake_objects(lake)
    assert boto3.client("s3").head_object(Bucket=lake, Key=key)["ServerSideEncryption"] == "AES256"


def test_the_account_and_the_source_version_name_the_partition(lake):
    settings = sink_settings(uri=URI + "/1.0", securitylake_account_id="sts")
    SecurityLakeSink(settings).send(golden_events()[:1])

    (key,) = lake_objects(lake)
    assert re.match(r"^ext/emailauth-\w+/1\.0/region=us-east-1/accountId=123456789012/eventDay=", key)


def test_an_event_that_is_not_ocsf_is_refused_unsent(lake):
    good = golden_events()[0]
    ecs = Event("e" * 64, good.time_us, b'{"event": {"id": "x"}}')
    text = Event("t" * 64, good.time_us, b"CEF:0|a", is_json=False)

    result = SecurityLakeSink(SinkSettings(uri=URI)).send([good, ecs])
    rejection = only_rejection(result, ecs, delivered=1)
    assert "not an OCSF event" in rejection.reason
    assert SecurityLakeSink(SinkSettings(uri=URI)).send([text]).rejected[0].event is text
    assert sum(len(rows) for rows in lake_objects(lake).values()) == 1


def test_a_put_answered_without_an_etag_is_not_delivered(aws, monkeypatch):
    with NoEtag() as fake:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", fake.http_url)
        with pytest.raises(SinkError, match="without an ETag") as caught:
            SecurityLakeSink(SinkSettings(uri=URI)).send(golden_events()[:1])
    assert caught.value.retryable


def test_source_names_stay_within_the_api_limit():
    base = "a" * 12
    assert parse_uri(urlsplit(f"securitylake://b/ext/{base}"))[1] == base
    assert max(len(name) for name in source_names(base).values()) == MAX_SOURCE_NAME
    with pytest.raises(ValueError, match="FORWARDER_SINK: the Security Lake source name"):
        parse_uri(urlsplit("securitylake://b/ext/" + "a" * 13))


@pytest.mark.parametrize(
    "uri",
    [
        "securitylake://",
        "securitylake://bucket",
        "securitylake://bucket/emailauth",
        "securitylake://bucket/ext/",
        "securitylake://bucket/ext/email auth",
        "securitylake://bucket/ext/emailauth/1.0/more",
        "securitylake://bucket/ext/emailauth?x=1",
    ],
)
def test_bad_uris_are_refused_naming_the_variable(uri):
    assert any(p.startswith("FORWARDER_SINK") for p in sink_problems(SinkSettings(uri=uri), "ocsf"))


def test_only_ocsf_is_taken_and_a_bad_account_is_named():
    assert sink_problems(SinkSettings(uri=URI), "ocsf") == []
    assert sink_problems(SinkSettings(uri=URI), "ecs") == [
        "FORWARDER_FORMAT: the Security Lake sink takes OCSF only: set FORWARDER_FORMAT=ocsf (got 'ecs')"
    ]
    bad = sink_settings(uri=URI, securitylake_account_id="12345")
    (problem,) = sink_problems(bad, "ocsf")
    assert problem.startswith("FORWARDER_SECURITYLAKE_ACCOUNT_ID must be")
    for good in ("123456789012", "external", "external_acme-1", "sts"):
        assert sink_problems(sink_settings(uri=bad.uri, securitylake_account_id=good), "ocsf") == []


def test_the_probe_reaches_the_bucket_and_names_the_sources_without_writing(lake):
    line = probe_sink(sink_settings(uri=URI, securitylake_account_id="sts"))

    assert "exists and these credentials reach it" in line
    assert "emailauth-auth" in line and "emailauth-entity" in line
    assert "region=us-east-1/accountId=123456789012" in line
    assert lake_objects(lake) == {}


def test_the_probe_fails_on_a_missing_bucket_naming_the_variable(aws):
    with pytest.raises(SinkError, match="does not exist; check FORWARDER_SINK"):
        probe_sink(SinkSettings(uri=URI))


def test_the_readme_registers_every_source_with_its_event_class():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^aws securitylake create-custom-log-source (.*)$", readme, re.M)
    documented = {
        re.search(r"--source-name (\S+)", c)[1]: (re.search(r"--event-classes (\S+)", c) or [None, None])[1]
        for c in commands
    }
    wanted = {source_names("emailauth")[uid]: event_class for uid, (_, event_class) in SOURCES.items()}
    assert documented == wanted


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
VALUES = json_like(SCALARS, max_size=3, max_leaves=8)
ACTIONS = st.sampled_from([*API_ACTIONS, "user.create", "user.delete", "spf_record_source.update", "x.y"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(ACTIONS, VALUES, VALUES, VALUES, st.sampled_from(["user", "domain"])),
        min_size=1,
        max_size=6,
    )
)
def test_whatever_the_records_hold_each_object_reads_back_as_the_rows_written(records):
    """Records of any shape, several to an object: the Parquet file is written (no clash of column
    types) and reads back as each row's OCSF 1.3 form."""
    events = [
        format_ocsf(audit_record(*fields, created_at=f"2026-01-02T03:04:{n:02d}Z"), OPTIONS)
        for n, fields in enumerate(records)
    ]
    groups, rejected = rows_by_object(events)
    assert not rejected
    for pairs in groups.values():
        table = pq.read_table(io.BytesIO(to_parquet([row for _, row in pairs], JSON_PATHS)))
        assert [as_written(row) for row in table.to_pylist()] == [written(event) for event, _ in pairs]


def written(event: Event) -> dict:
    """What a row of ``event`` should read back as: its OCSF 1.3 form, free-form values as JSON text,
    then through ``as_written`` like the rows read."""
    row = downgrade(json.loads(event.body))
    for path in JSON_PATHS:
        row = with_json_text(row, path)
    return as_written(row)


def test_a_class_uid_of_any_json_shape_is_refused_not_a_crash(lake):
    base = golden_events()[0]
    odd = [
        Event(f"{n}" * 64, base.time_us, json.dumps({"class_uid": value}).encode())
        for n, value in enumerate([[3001], {"a": 1}, "3001", None, 3003])
    ]
    result = SecurityLakeSink(SinkSettings(uri=URI)).send(odd)
    assert result.delivered == 0 and [r.event for r in result.rejected] == odd


def test_each_tenant_may_name_its_own_account_partition():
    from forwarder.tenants import parse_tenants
    from tests.test_tenants import BASE, tenant

    base = {**BASE, "FORWARDER_SINK": URI, "FORWARDER_FORMAT": "ocsf"}
    doc = {"tenants": [tenant("acme", securitylake_account_id="external_acme"), tenant("globex")]}
    acme, globex = parse_tenants(doc, base)
    assert acme.settings.sink.options_of(SecurityLakeOptions).account_id == "external_acme"
    assert globex.settings.sink.options_of(SecurityLakeOptions).account_id == "external"


def test_the_keys_a_batch_will_be_written_under_are_known_before_and_each_object_says_what_it_holds(lake):
    sink = open_sink(SinkSettings(uri=URI))
    events = golden_events()
    keys = sink.object_keys(events)

    sink.send(events)

    written = lake_objects(lake)
    assert sorted(keys) == sorted(written), "the journal names exactly the objects send writes"
    for key in keys:
        assert sorted(sink.held_by(key)) == sorted(row["metadata"]["uid"] for row in written[key])
    assert sink.held_by(keys[0].replace(keys[0][-70:-14], "0" * 56)) is None, "an object never written"


def test_an_object_that_does_not_hold_the_events_its_key_names_is_not_taken_as_delivered(lake):
    sink = open_sink(SinkSettings(uri=URI))
    events = golden_events()
    first, second = sink.object_keys(events)[:2]
    sink.send(events)
    s3 = boto3.client("s3")
    s3.put_object(Bucket=lake, Key=first, Body=s3.get_object(Bucket=lake, Key=second)["Body"].read())
    s3.put_object(Bucket=lake, Key=second, Body=b"not parquet")

    assert sink.held_by(first) is None and sink.held_by(second) is None


def test_by_default_the_batches_in_flight_fit_the_delivered_ids_index_a_crash_is_recovered_into(lake):
    from forwarder.state.delivered import MAX_IDS

    sink = open_sink(SinkSettings(uri=URI))
    assert sink.max_in_flight * sink.max_batch_events <= MAX_IDS


ACTIONS = ["user.login", "user.update", "user.update_roles", "domain.update"]  # the four classes
_lakes = itertools.count()


@pytest.fixture
def front(aws, monkeypatch):
    with S3Front(aws) as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", server.http_url)
        yield server


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    trails=st.lists(
        st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 3 * 86400)), min_size=4, max_size=25),
        min_size=1,
        max_size=len(USERS),
    ),
    faults=st.lists(st.sampled_from(["stored", "stored", "fail", "drop"]), min_size=2, max_size=6),
    batch_events=st.lists(st.integers(2, 30), min_size=3, max_size=3),
    concurrency=st.integers(1, 3),
    page_size=st.integers(3, 25),
)
def test_across_s3_faults_that_cut_batches_between_objects_every_record_lands_once(
    front, tmp_path, trails, faults, batch_events, concurrency, page_size
):
    """Runs through the moto front: in the first, S3 answers 503/500, stores an object then answers
    503, or drops the connection (one attempt a request: a batch fails with part of its objects
    written); later runs meet none, and batch the events otherwise (``batch_events`` a run). Every
    record lands as exactly one row: the objects a failed batch wrote are read back and counted
    delivered, not written again in other objects."""
    lake = f"aws-security-data-lake-us-east-1-p{next(_lakes)}"
    with front.lock:
        front._faults.clear()  # an example that failed may have left some
    moto = boto3.client("s3", endpoint_url=front.moto_url)  # the front passes objects, not buckets
    moto.create_bucket(Bucket=lake)
    base_us = now_us() - 4 * 86400 * 1_000_000  # three UTC days: objects per class and day
    records = []
    for user, trail in zip(USERS, trails):
        made = make_records([offset for _, offset in trail], base_us, user)
        for record, (action, _) in zip(made, trail):
            record["action"] = record["filterable_action"] = action
        records += made
    streams = [Stream("user", user) for user in USERS[: len(trails)]]
    store, quarantine = MemoryStore(), LocalQuarantine(str(tmp_path / f"q{lake}"))
    limits = Limits(initial_lookback_s=5 * 86400, window_s=7200, max_records_per_pass=40)
    inject = {
        "fail": front.fail_next,
        "stored": front.accept_then_fail_next,
        "drop": front.drop_connection_next,
    }
    for run, size in enumerate(batch_events):
        with front.lock:
            front._faults.clear()
        for kind in faults if run == 0 else []:
            inject[kind](1)
        uri = f"securitylake://{lake}/ext/emailauth"
        sink = SecurityLakeSink(SinkSettings(uri=uri, max_attempts=1, batch_events=size))
        source = ListSource(records, "asc", page_size, 0)
        ctx = run_context(
            source, store, sink, quarantine, limits, streams, format_event=format_ocsf, linger_s=0.0
        )
        run_streams(ctx, streams, concurrency, RunReport(started="now"))

    rows = Counter(row["metadata"]["uid"] for rows in lake_objects(lake).values() for row in rows)
    assert sorted(rows) == sorted(event_id(r) for r in records), "a record lost"
    assert [uid for uid, n in rows.items() if n > 1] == [], "a row twice"


def test_an_object_the_forwarder_may_not_read_back_is_not_taken_as_delivered_and_the_run_goes_on(
    front, caplog
):
    lake = f"aws-security-data-lake-us-east-1-p{next(_lakes)}"
    boto3.client("s3", endpoint_url=front.moto_url).create_bucket(Bucket=lake)
    sink = SecurityLakeSink(SinkSettings(uri=f"securitylake://{lake}/ext/emailauth"))
    events = golden_events()
    key = sink.object_keys(events)[0]
    sink.send(events)
    front.fail_next(1, status=403)  # a provider role without s3:GetObject (or s3:ListBucket)

    assert sink.held_by(key) is None
    assert "grant the forwarder s3:GetObject and s3:ListBucket" in caplog.text
    assert sink.held_by(key) is not None
    front.fail_next(1, status=500)
    with pytest.raises(SinkError, match="reading s3://"):
        SecurityLakeSink(SinkSettings(uri=f"securitylake://{lake}/ext/emailauth", max_attempts=1)).held_by(
            key
        )
