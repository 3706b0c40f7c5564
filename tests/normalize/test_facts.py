"""The facts every format renders: the cache of change-less records gives what deriving gives, no
event shares a container another event (or the cache) could be changed through, and events filled
into cached templates are the events rendered in full."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import threading
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forwarder import jsonutil
from forwarder.normalize import cef, ecs, ocsf, template
from forwarder.normalize.cef import format_cef, to_cef
from forwarder.normalize.changes import as_keyword, as_text
from forwarder.normalize.ecs import format_ecs, to_ecs
from forwarder.normalize.facts import _derive, _plain_facts, facts, plain_key
from forwarder.normalize.memo import MAX_TEXT, Memo, text_cache
from forwarder.normalize.ocsf import format_ocsf, to_ocsf
from forwarder.normalize.plain import PlainCache
from forwarder.normalize.risk import assess
from forwarder.normalize.template import compile_template, hole
from forwarder.records import AuditRecord, parse_record
from forwarder.sim.generate import generate_org
from forwarder.timeutil import format_us

from . import OPTIONS, golden_cases, golden_records


def corpus() -> list[AuditRecord]:
    records = [record for case in golden_cases() for record in golden_records(case)]
    return records + [
        parse_record(raw) for raw in generate_org(3, now_us=1_772_366_400_000_000).all_records()
    ]


def test_cached_facts_are_the_derived_facts():
    for record in corpus():
        assert facts(record) == _derive(record.raw, record.object_type)


def test_the_risk_of_the_analyses_as_made_is_the_risk_of_the_audit():
    for record in corpus():
        found = facts(record)
        assert found.risk == assess(found.action, found.audit), record.raw


LOGIN = {
    "action": "user.login",
    "filterable_action": "user.login",
    "changes": {},
    "created_at": "2026-01-05T08:15:30Z",
}


@pytest.mark.parametrize(
    "first, second", [(1, True), (1, 1.0), (0, False), (True, 1.0)]
)  # equal keys in Python
def test_values_equal_in_python_but_not_in_json_are_told_apart(first, second):
    one = parse_record(dict(LOGIN, user=first, object=first))
    other = parse_record(dict(LOGIN, user=second, object=second))
    facts(one)  # warm the cache with the first
    assert facts(other) == _derive(other.raw, other.object_type)


@pytest.mark.parametrize(
    "first, second", [(1, True), (1, 1.0), (0, False), (True, 1.0)]
)  # equal keys in Python
def test_change_records_tell_apart_values_equal_in_python_but_not_in_json(first, second):
    change = dict(LOGIN, action="user.update", filterable_action="user.update", changes={"phone": ["1", "2"]})
    one = parse_record(dict(change, user=first, object=first))
    other = parse_record(dict(change, user=second, object=second))
    facts(one)  # warm the caches of the change record's subject with the first
    found = facts(other)
    assert found.actor.fields["id"] == found.target.fields["id"] == as_text(second)
    assert found.audit["object"] == as_keyword(second)
    assert found.message.startswith(f"{as_text(second)} updated user {as_text(second)}")


def test_a_changed_event_leaves_the_next_one_alone():
    for record in corpus():
        for render in (to_ecs, to_ocsf):
            before = jsonutil.dumps(render(record, OPTIONS))
            spoil(render(record, OPTIONS))
            assert jsonutil.dumps(render(record, OPTIONS)) == before, record.raw
        line = to_cef(record, OPTIONS)
        spoil(to_ecs(record, OPTIONS))
        assert to_cef(record, OPTIONS) == line


def spoil(value: object) -> None:
    """Change every container in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            spoil(item)
        value["spoiled"] = True
    elif isinstance(value, list):
        for item in value:
            spoil(item)
        value.append("spoiled")


def test_records_carry_the_bytes_their_id_hashes():
    for record in corpus():
        assert record.canonical == jsonutil.canonical(record.raw)
        assert hashlib.sha256(record.canonical).hexdigest() == record.event_id
    by_hand = AuditRecord(raw={"id": "x"}, event_id="x", ts_us=0)
    assert by_hand.canonical == b'{"id":"x"}'


def test_long_strings_are_never_cache_keys():
    calls = []

    @text_cache(8)
    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    short, long = "a" * MAX_TEXT, "b" * (MAX_TEXT + 1)
    assert [upper(short), upper(short), upper(long), upper(long)] == [short.upper()] * 2 + [long.upper()] * 2
    assert calls == [short, long, long]

    before = _plain_facts.cache_info().currsize
    record = parse_record(dict(LOGIN, user="x" * MAX_TEXT + "@example.com", object="y"))
    assert facts(record) == _derive(record.raw, record.object_type)
    assert not facts(record).cacheable
    assert _plain_facts.cache_info().currsize == before
    assert "suser=" + "x" * 1000 in to_cef(record, OPTIONS)  # computed, not cached


def test_a_memo_keeps_only_short_texts_and_at_most_its_size():
    calls = []

    def name(key: object) -> str:
        calls.append(key)
        return repr(key)

    memo: Memo[str] = Memo(name, 2)
    long = "b" * (MAX_TEXT + 1)
    # equal in Python, not in JSON: only texts are kept, so neither serves the other
    assert [memo[(1,)], memo[(True,)], memo[(1,)]] == ["(1,)", "(True,)", "(1,)"]
    assert [memo[long], memo[long]] == [repr(long)] * 2
    assert [memo["a"], memo["a"], memo[("a", None)], memo["c"]] == ["'a'", "'a'", "('a', None)", "'c'"]
    assert calls == [(1,), (True,), (1,), long, long, "a", ("a", None), "c"]
    assert list(memo) == [("a", None), "c"]  # the oldest dropped


def test_a_memo_shared_by_stream_threads_stays_bounded_and_never_fails_a_lookup():
    """Streams normalize in threads: dropping the oldest entry while another thread adds one must
    neither raise (a dict changed during iteration) nor let the memo grow past its size."""
    memo: Memo[str] = Memo(str.upper, 4)
    errors: List[BaseException] = []

    def look_up(thread: int) -> None:
        try:
            for n in range(20_000):
                assert memo[f"{thread}-{n}"] == f"{thread}-{n}".upper()
        except BaseException as exc:
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=look_up, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(memo) <= 4 + len(threads)  # each thread may add one past a drop it raced


@pytest.mark.parametrize("include_original", [True, False])
def test_events_filled_into_templates_are_the_rendered_events(include_original):
    opts = dataclasses.replace(OPTIONS, include_original=include_original)
    odd = [
        dict(LOGIN, user='q"\\\x00\u2028é@example.com', object=None),
        dict(LOGIN, user="100%s%d%%@example.com"),  # a CEF line is a bytes format: its own % doubled
        dict(LOGIN, created_at="2026-01-05 08:15:30+02:00"),
        # equal to one another in Python, not in JSON: a cached "1" must not serve them
        *(dict(LOGIN, user=value) for value in ("1", 1, True, 1.0, ["1"], {"1": 1})),
    ]
    records = corpus() + [parse_record(raw) for raw in odd]
    for _ in range(2):  # the second time from the cached templates
        for record in records:
            assert format_ecs(record, opts).body == jsonutil.dumps(to_ecs(record, opts)), record.raw
            assert format_ocsf(record, opts).body == jsonutil.dumps(to_ocsf(record, opts)), record.raw
            assert format_cef(record, opts).body == to_cef(record, opts).encode(), record.raw


def test_only_a_record_with_changes_is_rendered_from_facts_derived_at_once(monkeypatch):
    """Changes holding anything leave a record no plain key: its event is rendered from its derived
    facts without a template lookup. Changes {} or null (or none) leave it to the templates."""
    derived: List[object] = []
    monkeypatch.setattr(
        template, "derive", lambda record: derived.append(record.raw["changes"]) or facts(record)
    )
    values = [{"a": [1, 2]}, ["x"], "x", True, 2, {}, None, [], "", False, 0]
    for changes in values:
        record = parse_record(dict(LOGIN, user="d@x.example", changes=changes))
        assert format_ecs(record, OPTIONS).body == jsonutil.dumps(to_ecs(record, OPTIONS)), changes
        assert format_ocsf(record, OPTIONS).body == jsonutil.dumps(to_ocsf(record, OPTIONS)), changes
    assert derived == [changes for changes in values if changes for _ in ("ecs", "ocsf")]


_SHAPES = st.fixed_dictionaries(
    {"user": st.sampled_from(["ann@example.com", 'q"\\é@example.com'])},
    optional={
        "changes": st.sampled_from([None, {}]),
        "object": st.sampled_from([None, "ann@example.com"]),
        "action": st.just("user.login"),
        "filterable_action": st.sampled_from([None, "user.login"]),
    },
)
# canonical twice; as long but not canonical (kept as given), also once escaped; short
_TIMES = st.sampled_from(
    [
        "2026-01-05T08:15:30.123456Z",
        "2026-01-05T08:15:31.000001Z",
        "2026-01-05t08:15:30.123456z",
        "\t2026-01-05T08:15:30.1234Z",
        "2026-01-05 08:15:30Z",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_SHAPES, _TIMES), min_size=1, max_size=6))
def test_a_template_baked_from_one_record_serves_only_records_of_its_shape(records):
    """A login's event.original is baked into its template from the first record of its key whose
    time is canonical; records of the same key but another shape (a field null or left out, changes
    {} or null) or a time in another form are filled with their own text, never the baked one."""
    for shape, created in records:
        record = parse_record(dict(shape, created_at=created))
        assert format_ecs(record, OPTIONS).body == jsonutil.dumps(to_ecs(record, OPTIONS)), record.raw
        assert format_ocsf(record, OPTIONS).body == jsonutil.dumps(to_ocsf(record, OPTIONS)), record.raw


_CANONICAL_TIMES = ["2026-01-05T08:15:30.123456Z", "2026-01-05T08:15:31.000001Z"]
# strings made of the times themselves, of what writes a key or escapes a quote, and of text
_PIECES = st.lists(
    st.sampled_from([*_CANONICAL_TIMES, '"', "\\", '","created_at":"', "\x00", "a"]), max_size=3
)
_TRICKY = st.fixed_dictionaries(
    {"user": _PIECES.map("".join), "action": _PIECES.map("".join)},
    optional={"object": _PIECES.map("".join), "changes": st.sampled_from([None, {}])},
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TRICKY, st.sampled_from(_CANONICAL_TIMES)), min_size=1, max_size=6))
def test_no_text_found_serves_another_record(records):
    """Events and lines found by a record's text around its created_at (``plain.TextCache``) are
    the record's own, whatever its strings hold: its times, quotes, escapes or a created_at key."""
    for fields, created in records:
        record = parse_record(dict(fields, created_at=created))
        for opts in (OPTIONS, dataclasses.replace(OPTIONS, include_original=False)):
            assert format_ecs(record, opts).body == jsonutil.dumps(to_ecs(record, opts)), record.raw
            assert format_ocsf(record, opts).body == jsonutil.dumps(to_ocsf(record, opts)), record.raw
        assert format_cef(record, OPTIONS).body == to_cef(record, OPTIONS).encode(), record.raw


@pytest.mark.parametrize("include_original", [True, False])
def test_a_baked_template_is_found_only_by_a_text_it_fits(monkeypatch, include_original):
    """Templates are found by a record's canonical text around its created_at (with include_original,
    the text baked in). A record with the same ending but another beginning, another stream type, or
    its created_at also written earlier in the text (where the lookup finds it first) gets its own
    event; once every record was seen, seeing them again compiles nothing (none is baked again on
    every record)."""
    opts = dataclasses.replace(OPTIONS, include_original=include_original)
    compiled = []
    monkeypatch.setattr(template, "compile_template", lambda *a: compiled.append(a) or compile_template(*a))
    login = {
        "action": "User Login",
        "filterable_action": "user.login",
        "object": "a@x.example",
        "user": "a@x.example",
    }
    first, later = "2026-01-05T08:15:30.000000Z", "2026-01-05T09:00:00.000000Z"
    seen = [
        parse_record(dict(login, created_at=first)),
        parse_record(dict(login, created_at=later)),  # found by its ending: the same event, another time
        parse_record(dict(login, action="User Logon", created_at=later)),  # same ending, same length
        parse_record(dict(login, action="Admin", created_at=later)),  # same ending, shorter
        parse_record(
            dict(login, filterable_action="sso.login", created_at=first)
        ),  # object type: the stream's
        parse_record(dict(login, filterable_action="sso.login", created_at=later), "domain"),
        parse_record(dict(login, action=later, created_at=later)),  # created_at first found in action
    ]

    def see_all() -> None:
        for record in seen:
            for format_body, document in ((format_ecs, to_ecs), (format_ocsf, to_ocsf)):
                assert format_body(record, opts).body == jsonutil.dumps(document(record, opts)), record
            assert format_cef(record, opts).body == to_cef(record, opts).encode(), record

    see_all()
    first_round = len(compiled)
    see_all()
    assert len(compiled) == first_round


@pytest.mark.parametrize("include_original", [True, False])
@pytest.mark.parametrize("formatted", [ecs._FORMAT, ocsf._FORMAT])
def test_a_users_logins_after_the_first_are_found_by_their_text(monkeypatch, formatted, include_original):
    """With or without event.original, a login whose text differs from one seen before only in
    created_at is filled at once, its template found by its text: no plain key read, no render."""
    opts = dataclasses.replace(OPTIONS, include_original=include_original)
    by_key: List[AuditRecord] = []
    body = formatted._body
    monkeypatch.setattr(
        formatted, "_body", lambda record, *rest: by_key.append(record) or body(record, *rest)
    )
    login = {"action": "User Login", "filterable_action": "user.login", "user": "text@x.example"}
    records = [parse_record(dict(login, created_at=f"2026-01-05T08:15:{n:02d}.00{n:04d}Z")) for n in range(5)]
    for record in records:
        assert formatted.event(record, opts).body == jsonutil.dumps(formatted.document(record, opts))
    assert by_key == records[:1]


def test_a_login_line_is_found_by_its_text_and_filled_with_its_own_time_and_id(monkeypatch):
    """CEF keeps a login's line by its text around created_at too: the logins of a user after the
    first are found by their text (no plain key read), each line with its own rt and eventId; other
    options (another vendor) have lines of their own, another pass (ingest time) shares them."""
    found_by_key: List[AuditRecord] = []
    plain_line = cef._plain_line
    monkeypatch.setattr(
        cef, "_plain_line", lambda record, opts: found_by_key.append(record) or plain_line(record, opts)
    )
    login = {"action": "User Login", "filterable_action": "user.login", "user": "cef%s@x.example"}
    records = [
        parse_record(dict(login, created_at=f"2026-01-05T08:15:{n:02d}.00{n:04d}Z")) for n in range(20)
    ]
    other = dataclasses.replace(OPTIONS, vendor="Other")
    next_pass = dataclasses.replace(OPTIONS, ingest_time_us=OPTIONS.ingest_time_us + 1)
    for opts in (OPTIONS, next_pass, other):
        for record in records:
            assert format_cef(record, opts).body == to_cef(record, opts).encode(), record
    assert found_by_key == [records[0], records[0]]  # per options value, the first login only


def test_logins_sharing_an_ending_each_keep_their_template(monkeypatch):
    """Two plain keys whose canonical texts end alike (another action, the same filterable_action,
    object and user) each get their template and baked text once, however their records alternate."""
    compiled = []
    monkeypatch.setattr(template, "compile_template", lambda *a: compiled.append(a) or compile_template(*a))
    ending = {"filterable_action": None, "object": "alt@x.example", "user": "alt@x.example"}
    records = [
        parse_record(dict(ending, action=action, created_at=f"2026-01-05T08:15:{n:02d}.000000Z"))
        for n in range(40)
        for action in ("User Login", "User Logout")
    ]
    for record in records:
        assert format_ecs(record, OPTIONS).body == jsonutil.dumps(to_ecs(record, OPTIONS))
    assert len(compiled) == 4  # per action: its template, then it with the text baked in


def test_each_pass_stamps_its_own_ingest_time_into_cached_events(monkeypatch):
    """A run's passes differ only in their ingest time: their options compare equal, so templates
    and lines cached in one pass serve the next (none is compiled again), and each event still
    carries its own pass's time."""
    compiled = []
    monkeypatch.setattr(template, "compile_template", lambda *a: compiled.append(a) or compile_template(*a))
    later = dataclasses.replace(OPTIONS, ingest_time_us=OPTIONS.ingest_time_us + 61_000_123)
    assert later == OPTIONS
    login = {"action": "User Login", "filterable_action": "user.logon", "user": "pass@x.example"}
    records = [
        parse_record(dict(login, created_at="2026-01-05T08:15:30.000000Z")),  # baked text
        parse_record(dict(login, created_at="2026-01-05T08:15:30Z")),  # filled: not canonical
        parse_record(dict(login, created_at="2026-01-05T08:15:31.000000Z", changes={"a": [1, 2]})),
    ]
    first_pass = 0
    for opts in (OPTIONS, later, OPTIONS, later):
        for record in records:
            ecs_event = jsonutil.loads(format_ecs(record, opts).body)
            ocsf_event = jsonutil.loads(format_ocsf(record, opts).body)
            assert ecs_event == to_ecs(record, opts)
            assert ecs_event["event"]["created"] == format_us(opts.ingest_time_us)
            assert ocsf_event == to_ocsf(record, opts)
            assert ocsf_event["metadata"]["processed_time"] == opts.ingest_time_us // 1000
        first_pass = first_pass or len(compiled)
    assert first_pass and len(compiled) == first_pass


def test_caches_per_options_follow_the_options_value():
    calls = []

    def line(key, opts):
        calls.append(key)
        return f"{key}/{opts.vendor}"

    cache = PlainCache(line, 8)
    record = parse_record(LOGIN)
    k = plain_key(record)
    other = dataclasses.replace(OPTIONS, vendor="Other")
    assert [cache.get(record, OPTIONS), cache.get(record, other), cache.get(record, OPTIONS)] == [
        f"{k}/Fortra",
        f"{k}/Other",
        f"{k}/Fortra",
    ]
    assert cache.get(record, dataclasses.replace(OPTIONS)) == f"{k}/Fortra"  # an equal copy: cached
    next_pass = dataclasses.replace(OPTIONS, ingest_time_us=OPTIONS.ingest_time_us + 1)
    assert cache.get(record, next_pass) == f"{k}/Fortra"  # another pass of the run: cached
    assert len(calls) == 3
    login = parse_record(LOGIN)
    assert to_cef(login, OPTIONS).split("|")[1] == "Fortra" and to_cef(login, other).split("|")[1] == "Other"


def test_a_template_fills_every_place_of_a_value():
    body = jsonutil.dumps({"a": hole(1), "b": [hole(0), 2, hole(1)], "c": "id " + hole(1) + "!"})
    template = compile_template(body, 2, bare=(0,))
    assert template is not None and template(b"7", jsonutil.string_content('x\n"')) == jsonutil.dumps(
        {"a": 'x\n"', "b": [7, 2, 'x\n"'], "c": 'id x\n"!'}
    )
    assert compile_template(body, 3) is None  # a value with no place: rendered in full instead
