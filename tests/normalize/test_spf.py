"""SPF analytics: examples."""

from __future__ import annotations

import pytest

from forwarder.normalize import spf


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
