from __future__ import annotations

from types import SimpleNamespace
from typing import Optional

import pytest

from forwarder.normalize.audit import dmarc_fields
from forwarder.normalize.dmarc import Policy, effective
from forwarder.normalize.tags import parse_tags


def analyze(before: Optional[str], after: Optional[str]) -> SimpleNamespace:
    """``emailauth.audit.dmarc`` of a change from ``before`` to ``after``, as events carry it."""
    fields = dmarc_fields({"dmarc_txt_record": [before, after]})
    assert fields is not None
    return SimpleNamespace(**{"before": {}, "after": {}, **fields})


RUA = "rua=mailto:d@example.org"


def test_parse_tags_is_lenient_and_ordered():
    text = ' "v=DMARC1 ; P=Reject;pct = 50;; junk; p=none; rua=mailto:a@x,mailto:b@y;" '
    assert parse_tags(text) == {"v": "DMARC1", "p": "Reject", "pct": "50", "rua": "mailto:a@x,mailto:b@y"}
    assert list(parse_tags(text)) == ["v", "p", "pct", "rua"]
    assert parse_tags("") == {}


def test_effective_applies_defaults():
    assert effective(parse_tags("v=DMARC1; p=reject")) == Policy(
        p="reject",
        sp="reject",
        np="reject",
        pct=100,
        testing=False,
        adkim="r",
        aspf="r",
        rua=False,
        ruf=False,
    )
    policy = effective(parse_tags("v=DMARC1; p=none; sp=quarantine; pct=20; t=y; adkim=s; ruf=mailto:f@x"))
    assert policy is not None
    assert (policy.sp, policy.np, policy.pct, policy.testing, policy.adkim, policy.ruf) == (
        "quarantine",
        "quarantine",
        20,
        True,
        "s",
        True,
    )


@pytest.mark.parametrize(
    "text",
    [
        "v=spf1 -all",
        "p=reject; v=DMARC1",  # v must come first
        "v=DMARC2; p=reject",
        "v=DMARC1",  # no p and no rua
        "v=DMARC1; p=block",
        "v=DMARC1 p=reject",  # a missing separator swallows p
    ],
)
def test_effective_rejects_unusable_records(text):
    assert effective(parse_tags(text)) is None


def test_missing_p_with_rua_acts_as_none():
    policy = effective(parse_tags(f"v=DMARC1; {RUA}"))
    assert policy is not None and policy.p == "none"


def test_out_of_range_pct_falls_back_to_default():
    for pct in ("150", "-1", "abc", ""):
        policy = effective(parse_tags(f"v=DMARC1; p=reject; pct={pct}"))
        assert policy is not None and policy.pct == 100


# One rule per row, then the same change the other way round, which must not weaken.
WEAKENING = [
    (
        "p_weakened",
        "v=DMARC1; p=reject; sp=reject; np=reject",
        "v=DMARC1; p=quarantine; sp=reject; np=reject",
    ),
    ("p_weakened", "v=DMARC1; p=quarantine; sp=none; np=none", "v=DMARC1; p=none; sp=none; np=none"),
    ("sp_weakened", "v=DMARC1; p=reject; sp=reject; np=reject", "v=DMARC1; p=reject; sp=none; np=reject"),
    ("sp_weakened", "v=DMARC1; p=none; sp=reject; np=none", "v=DMARC1; p=none; np=none"),  # inherits none
    ("np_weakened", "v=DMARC1; p=reject; np=reject", "v=DMARC1; p=reject; np=quarantine"),
    ("np_weakened", "v=DMARC1; p=none; sp=none; np=reject", "v=DMARC1; p=none; sp=none"),  # inherits none
    ("pct_lowered", "v=DMARC1; p=reject", "v=DMARC1; p=reject; pct=10"),
    ("pct_lowered", "v=DMARC1; p=quarantine; pct=80", "v=DMARC1; p=quarantine; pct=79"),
    ("testing_enabled", "v=DMARC1; p=reject", "v=DMARC1; p=reject; t=y"),
    ("testing_enabled", "v=DMARC1; p=quarantine; t=n", "v=DMARC1; p=quarantine; t=Y"),
    ("adkim_relaxed", "v=DMARC1; p=reject; adkim=s", "v=DMARC1; p=reject; adkim=r"),
    ("adkim_relaxed", "v=DMARC1; p=reject; adkim=s", "v=DMARC1; p=reject"),
    ("aspf_relaxed", "v=DMARC1; p=reject; aspf=s", "v=DMARC1; p=reject"),
    ("record_removed", "v=DMARC1; p=none", ""),
    ("record_removed", "v=DMARC1; p=none", None),
    ("record_invalid", "v=DMARC1; p=reject", "v=DMARC1; p=rejected"),
]


@pytest.mark.parametrize(("reason", "before", "after"), WEAKENING)
def test_weakening_rule(reason, before, after):
    change = analyze(before, after)
    assert change.weakened
    assert reason in change.weakened_reasons


@pytest.mark.parametrize(("reason", "before", "after"), WEAKENING)
def test_the_reverse_change_does_not_weaken(reason, before, after):
    change = analyze(after, before)
    assert not change.weakened, change.weakened_reasons


def test_single_rules_report_only_themselves():
    assert analyze("v=DMARC1; p=reject", "v=DMARC1; p=reject; pct=50").weakened_reasons == ["pct_lowered"]
    # sp is explicit and np inherits it, so only p moved
    assert analyze("v=DMARC1; p=reject; sp=reject", "v=DMARC1; p=quarantine; sp=reject").weakened_reasons == [
        "p_weakened"
    ]


def test_inherited_values_weaken_with_their_parent():
    change = analyze("v=DMARC1; p=reject", "v=DMARC1; p=none")
    assert change.weakened_reasons == ["p_weakened", "sp_weakened", "np_weakened"]
    explicit = analyze("v=DMARC1; p=reject; sp=reject", "v=DMARC1; p=none; sp=reject")
    assert explicit.weakened_reasons == ["p_weakened"]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("v=DMARC1; p=none", "v=DMARC1; p=quarantine; pct=50"),  # pct starts to matter: tighter
        ("v=DMARC1; p=quarantine; pct=50", "v=DMARC1; p=reject; pct=25"),  # stricter policy, fewer messages
        ("v=DMARC1; p=none", "v=DMARC1; p=none; t=y"),  # test mode on a policy that enforces nothing
        ("v=DMARC1; p=none; pct=100", "v=DMARC1; p=none; pct=0"),
        (None, "v=DMARC1; p=none"),
        ("garbage", ""),  # nothing was enforced, nothing is lost
        ("v=DMARC1; p=reject; rua=mailto:a@x", "v=DMARC1; p=reject; rua=mailto:b@y"),
        ("v=DMARC1; p=reject", "v=DMARC1;p=REJECT;"),
    ],
)
def test_changes_that_do_not_weaken(before, after):
    change = analyze(before, after)
    assert change.weakened_reasons == []
    assert change.visibility_reasons == []


@pytest.mark.parametrize(
    ("before", "after", "reasons"),
    [
        (f"v=DMARC1; p=reject; {RUA}", "v=DMARC1; p=reject", ["rua_removed"]),
        ("v=DMARC1; p=reject; ruf=mailto:f@x", "v=DMARC1; p=reject; ruf=", ["ruf_removed"]),
        (f"v=DMARC1; p=reject; {RUA}; ruf=mailto:f@x", "", ["rua_removed", "ruf_removed"]),
        (f"v=DMARC1; p=reject; {RUA}", "not dmarc", ["rua_removed"]),
    ],
)
def test_visibility_is_a_separate_reason(before, after, reasons):
    change = analyze(before, after)
    assert change.visibility_reasons == reasons
    assert change.visibility_reduced
    assert not set(reasons) & set(change.weakened_reasons)


def test_visibility_gained_is_not_reported():
    change = analyze("v=DMARC1; p=reject", f"v=DMARC1; p=reject; {RUA}")
    assert not change.visibility_reduced


def test_rua_removed_alone_does_not_weaken():
    change = analyze(f"v=DMARC1; p=reject; {RUA}", "v=DMARC1; p=reject")
    assert not change.weakened


def test_tags_on_both_sides_are_returned():
    change = analyze("v=DMARC1; p=reject", None)
    assert change.before == {"v": "DMARC1", "p": "reject"}
    assert change.after == {}
