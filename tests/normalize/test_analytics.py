"""SPF, DKIM, role and risk analytics: examples, and arbitrary values that must never break them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forwarder.normalize import dkim, roles, spf, txtrecords
from forwarder.normalize.changes import flatten, safe_names
from forwarder.normalize.risk import Risk, assess

from . import json_like
from .dkim_keys import KEYS

# -- SPF ---------------------------------------------------------------------------------------------


def test_spf_parse_reads_qualifier_targets_and_lookups():
    record = spf.parse('"v=spf1 ip4:192.0.2.0/24 a mx:mail.example include:_spf.Google.com ~all exists:x"')
    assert record == spf.SpfRecord("~all", ("include:_spf.google.com",), 4)
    assert spf.parse("v=spf1 include:a.example") == spf.SpfRecord("?all", ("include:a.example",), 1)
    assert spf.parse("v=spf1 redirect=_spf.example") == spf.SpfRecord(None, ("redirect=_spf.example",), 1)
    assert spf.parse("v=spf1 all -all").all == "+all"  # the first all decides
    assert spf.parse("v=spf10 -all") is None and spf.parse("spf1 -all") is None


@pytest.mark.parametrize(
    ("before", "after", "reasons"),
    [
        ("v=spf1 mx -all", "v=spf1 mx ~all", ["all_weakened"]),
        ("v=spf1 mx ~all", "v=spf1 mx -all", []),
        ("v=spf1 mx ?all", "v=spf1 mx +all", ["all_weakened", "all_pass"]),
        ("v=spf1 -all", None, ["record_removed"]),
        ("v=spf1 -all", "  ", ["record_removed"]),
        ("v=spf1 -all", "spf is off", ["record_invalid"]),
        ("v=spf1 -all", "v=spf1 " + " ".join(f"include:i{n}.example" for n in range(11)) + " -all",
         ["lookup_limit_exceeded"]),
        (None, "v=spf1 +all", []),  # nothing was enforced before
        ("v=spf1 redirect=a.example", "v=spf1 ~all", []),  # the redirect's end is unknown
    ],
)  # fmt: skip
def test_spf_weakening(before, after, reasons):
    assert spf.analyze(before, after).weakened_reasons == reasons


def test_spf_targets_added_and_removed_and_lookup_limit():
    change = spf.analyze(
        "v=spf1 include:a.example redirect=r.example",
        "v=spf1 include:b.example a a a a a a a a a a -all",
    )
    assert change.targets_added == ["include:b.example"]
    assert change.targets_removed == ["include:a.example", "redirect=r.example"]
    assert change.after is not None and change.after.lookups == 11 and change.over_lookup_limit


# -- DKIM --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("bits", "form"), [(1024, "spki"), (2048, "spki"), (2048, "pkcs1")])
def test_dkim_reads_rsa_key_sizes(bits, form):
    key = dkim.parse(f"v=DKIM1; k=rsa; p={KEYS[f'{form}-{bits}']}")
    assert key == dkim.DkimKey("rsa", bits, testing=False, revoked=False)


def test_dkim_reads_ed25519_and_flags():
    key = dkim.parse(f"v=DKIM1; k=ed25519; t=s:y; p={KEYS['ed25519']}")
    assert key == dkim.DkimKey("ed25519", 256, testing=True, revoked=False)
    assert dkim.parse("p=") == dkim.DkimKey("rsa", None, testing=False, revoked=True)
    assert dkim.parse("v=DKIM1; p=not-base64!!") == dkim.DkimKey("rsa", None, False, False)


@pytest.mark.parametrize(
    "text", ["v=DMARC1; p=reject", "v=spf1 -all", "k=rsa; v=DKIM1; p=", "p=not base64!", "hello", ""]
)
def test_dkim_ignores_what_is_not_a_key_record(text):
    assert dkim.parse(text) is None


def test_dkim_change_reasons():
    old, short = f"v=DKIM1; p={KEYS['spki-2048']}", f"v=DKIM1; p={KEYS['spki-1024']}"
    assert dkim.analyze(old, "v=DKIM1; k=rsa; p=").weakened_reasons == ["key_revoked"]
    assert dkim.analyze(old, None).removed and not dkim.analyze(old, None).revoked
    assert dkim.analyze(old, "gone").weakened_reasons == ["record_invalid"]
    assert dkim.analyze(old, short + "; t=y").weakened_reasons == ["testing_enabled", "key_shortened"]
    assert dkim.analyze("v=DKIM1; p=", old).weakened_reasons == []  # a key restored
    assert dkim.analyze(None, "v=DKIM1; p=").weakened_reasons == []


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


# -- roles and risk ----------------------------------------------------------------------------------


def test_role_analysis():
    change = roles.analyze(["AuditingRole"], ["AuditingRole", "UserAdminRole", "SuperAdmin"], True)
    assert change["admin_added"] == ["UserAdminRole"] and change["admin_granted"] and change["self_change"]
    gone = roles.analyze(["PolicyAdminRole", "AuditingRole"], [], False)
    assert gone["all_removed"] and gone["admin_removed"] == ["PolicyAdminRole"] and not gone["self_change"]
    assert not gone["admin_granted"] and not roles.analyze([], [], False)["all_removed"]
    assert (
        gone["audit_removed"]
        and not roles.analyze(["AuditingRole"], ["AuditingRole"], False)["audit_removed"]
    )
    assert roles.same_user("A@x.example", "a@X.example") and not roles.same_user("a@x.example", "b@x.example")
    assert not roles.same_user(None, None) and not roles.same_user("", "")


@pytest.mark.parametrize(
    ("action", "audit", "risk"),
    [
        ("user.login", {}, Risk(30, [])),
        ("user.update", {}, Risk(50, [])),
        (
            "user.update_roles",
            {"roles": {"added": ["X"], "admin_added": ["X"], "self_change": True}},
            Risk(95, ["self_admin_grant", "admin_role_granted"]),
        ),
        (
            "user.update_roles",
            {"roles": {"added": ["X"], "admin_added": [], "self_change": True}},
            Risk(70, ["self_role_change"]),
        ),
        (
            "user.update_roles",
            {"roles": {"removed": ["X"], "all_removed": True}},
            Risk(60, ["all_roles_removed"]),
        ),
        (
            "domain.update",
            {"spf": {"weakened_reasons": ["all_weakened", "all_pass"], "over_lookup_limit": True}},
            Risk(95, ["spf_all_pass", "spf_weakened", "spf_over_lookup_limit"]),
        ),
        (
            "domain.update",
            {"dkim": {"revoked": True, "weakened_reasons": ["key_revoked"]}},
            Risk(80, ["dkim_key_revoked"]),
        ),
        ("domain.update", {"dkim": {"weakened_reasons": ["testing_enabled"]}}, Risk(60, ["dkim_weakened"])),
        ("domain.destroy", {}, Risk(70, ["domain_deleted"])),
    ],
)
def test_risk(action, audit, risk):
    assert assess(action, audit) == risk


def test_risk_levels():
    assert [Risk(score, []).level for score in (0, 19, 20, 40, 69, 70, 89, 90, 100)] == [
        "info", "info", "low", "medium", "medium", "high", "high", "critical", "critical"
    ]  # fmt: skip


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
