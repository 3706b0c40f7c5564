"""A TXT record longer than 255 characters is printed as several quoted strings (``"a" "b"``); the
receiver joins them without a space, so the split form must analyse exactly as the joined one."""

from __future__ import annotations

from forwarder.normalize import dkim, spf
from forwarder.normalize.audit import dmarc_fields
from forwarder.normalize.tags import parse_tags, unquote

from .dkim_keys import KEYS


def split(record: str, size: int = 255) -> str:
    """The record as DNS tools print it: quoted strings of at most ``size`` characters."""
    return " ".join(f'"{record[i : i + size]}"' for i in range(0, len(record), size))


KEY_2048 = f"v=DKIM1; k=rsa; p={KEYS['spki-2048']}"
KEY_1024 = f"v=DKIM1; k=rsa; p={KEYS['spki-1024']}"


def test_unquote_joins_strings_and_strips_outer_quotes():
    assert unquote(' "v=spf1 " "-all" ') == "v=spf1 -all"
    assert unquote('"a"') == "a" and unquote("a b") == "a b"
    assert parse_tags('"v=DMARC1; p=reject; " "rua=mailto:d@x"') == {
        "v": "DMARC1",
        "p": "reject",
        "rua": "mailto:d@x",
    }


def test_split_spf_record_analyses_as_the_joined_one():
    before = "v=spf1 " + " ".join(f"include:_spf{i}.example.com" for i in range(12)) + " -all"
    assert len(before) > 255
    assert spf.parse(split(before)) == spf.parse(before)
    assert spf.analyze(split(before), "v=spf1 ~all").weakened_reasons == ["all_weakened"]


def test_split_2048_bit_dkim_key_is_read_and_its_shortening_is_seen():
    assert len(KEY_2048) > 255 and '" "' in split(KEY_2048)
    assert dkim.parse(split(KEY_2048)) == dkim.parse(KEY_2048)
    assert dkim.parse(split(KEY_2048)).key_bits == 2048
    assert dkim.analyze(split(KEY_2048), KEY_1024).weakened_reasons == ["key_shortened"]


def test_split_dmarc_record_keeps_its_tags_and_reports():
    joined = "v=DMARC1; p=reject; rua=mailto:d@x"
    split_form = '"v=DMARC1; p=reject; " "rua=mailto:d@x"'
    change = dmarc_fields({"dmarc_txt_record": [joined, split_form]})
    assert change is not None and change["weakened_reasons"] == [] and change["visibility_reasons"] == []
    assert change["after"] == dmarc_fields({"dmarc_txt_record": [joined, joined]})["after"]
