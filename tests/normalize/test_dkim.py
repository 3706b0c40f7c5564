"""DKIM analytics: examples."""

from __future__ import annotations

import pytest

from forwarder.normalize import dkim

from .dkim_keys import KEYS


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
