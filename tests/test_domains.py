"""Domain name forms (forwarder/domains.py): strict for configured names, lenient for records."""

from __future__ import annotations

import pytest

from forwarder.domains import label_forms, to_unicode_domain


@pytest.mark.parametrize(
    ("given", "unicode"),
    [
        ("xn--bcher-kva.example", "bücher.example"),
        ("XN--BCHER-KVA.Example.", "bücher.example"),
        (" Bücher.EXAMPLE ", "bücher.example"),
        ("example.com", "example.com"),
    ],
)
def test_a_configured_domain_takes_the_lowercase_unicode_form(given: str, unicode: str) -> None:
    assert to_unicode_domain(given) == unicode


@pytest.mark.parametrize("given", ["", " . ", "xn--zz.example", "a..example", "-bad-.example"])
def test_a_name_idna_cannot_read_is_refused(given: str) -> None:
    with pytest.raises(ValueError):  # idna.IDNAError is a UnicodeError, a ValueError
        to_unicode_domain(given)


@pytest.mark.parametrize(
    ("label", "forms"),
    [
        ("bücher", ("bücher", "xn--bcher-kva")),
        ("xn--bcher-kva", ("bücher", "xn--bcher-kva")),
        ("Example", ("example", "example")),
        ("_dmarc", ("_dmarc", "_dmarc")),  # not a hostname label: kept, never an error
        ("XN--ZZ", ("xn--zz", "xn--zz")),  # a broken punycode label: kept, lowercased
    ],
)
def test_a_record_label_has_a_unicode_and_an_ascii_form(label: str, forms: tuple) -> None:
    assert label_forms(label) == forms
