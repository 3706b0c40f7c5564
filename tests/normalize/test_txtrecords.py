"""TXT records (SPF, DKIM) found among the changes whatever their key, and arbitrary values that
must never break the SPF and DKIM analytics."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from forwarder.normalize import dkim, spf, txtrecords
from forwarder.normalize.changes import flatten, safe_names

from . import json_like

# -- finding records by content ----------------------------------------------------------------------


def test_records_are_found_whatever_the_key_is_called():
    changes = {
        "Zone Entry": ["v=spf1 -all", "v=spf1 +all"],
        "selector2._domainkey": "v=DKIM1; p=",  # a lone value: a record created
        "dmarc_txt_record": ["v=DMARC1; p=reject", "v=DMARC1; p=none"],
    }
    found_spf, found_dkim = found_in(changes, "spf"), found_in(changes, "dkim")
    assert found_spf is not None and found_spf["change"] == "zone_entry"
    assert found_spf["weakened_reasons"] == ["all_weakened", "all_pass"]
    assert found_dkim is not None and found_dkim["change"] == "selector2__domainkey"
    assert found_dkim["after"] == {"key_type": "rsa", "testing": False, "revoked": True}
    assert "before" not in found_dkim and not found_dkim["weakened"]
    assert found_in({"notes": ["v=spf2.0", 3]}, "spf") is None


# -- never fail on what is not recognised ------------------------------------------------------------

texts = st.text(max_size=40) | st.sampled_from(
    ["v=spf1", "v=spf1 +all", "V=SPF1 redirect=", "v=DKIM1; p=", "p=", "p=AAAA", "v=DKIM1; k=ed25519; p=AA==",
     'v=spf1 "" ~all', "v=DKIM1; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", "v=DMARC1; p=reject",
     "v=DMARC1 v=spf1", "v=DMARC1v=DKIM1; p=", 'v=DMARC1" "; p=AAAA']
)  # fmt: skip
values = json_like(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts, 3, 8)


@given(st.dictionaries(st.text(max_size=10), values | st.lists(texts | st.none(), min_size=2, max_size=2)))
def test_arbitrary_changes_never_break_the_analytics(changes):
    for fields in (found_in(changes, "spf"), found_in(changes, "dkim")):
        assert fields is None or isinstance(fields["weakened"], bool)


def found_in(changes, kind):
    """What ``txtrecords.fields`` gives for one kind of record, or None."""
    return txt_fields(changes).get(kind)


def txt_fields(changes):
    """``txtrecords.fields`` of the changes ``flatten`` finds may hold a TXT record."""
    texts = []
    flatten(changes, safe_names(changes), texts)
    return txtrecords.fields(texts)


def every_change_tried(changes, recognise, analyze):
    """The finder without its shortcut: every change in field-name order, each side tried."""
    for key, name in sorted(safe_names(changes).items(), key=lambda item: item[1]):
        pair = (
            changes[key]
            if isinstance(changes[key], list) and len(changes[key]) == 2
            else [None, changes[key]]
        )
        if all(side is None or isinstance(side, str) for side in pair) and any(map(recognise, pair)):
            return {"change": name, **analyze(*pair).fields()}
    return None


@given(st.dictionaries(st.text(max_size=10), values | st.lists(texts | st.none(), min_size=2, max_size=2)))
def test_the_shortcut_finds_what_trying_every_change_finds(changes):
    expected = {
        "spf": every_change_tried(changes, spf.is_spf, spf.analyze),
        "dkim": every_change_tried(changes, dkim.is_dkim, dkim.analyze),
    }
    found = txt_fields(changes)
    assert found == {kind: fields for kind, fields in expected.items() if fields}
    assert (found_in(changes, "spf"), found_in(changes, "dkim")) == (
        expected["spf"],
        expected["dkim"],
    )


@given(st.text(max_size=60), st.text(max_size=60))
def test_arbitrary_text_never_breaks_spf_or_dkim(before, after):
    assert isinstance(spf.analyze(before, after).weakened, bool)
    assert isinstance(dkim.analyze(before, after).weakened, bool)
    assert dkim.key_bits("rsa", before) is None or dkim.key_bits("rsa", before) > 0
