"""Domain names in their IDNA (UTS-46) forms. Pure: no I/O, no clock.

Two uses, two strictnesses: a configured or listed domain must be a valid name, in the lowercase
Unicode form the API wants and streams are named by (``to_unicode_domain`` raises otherwise); a
record's domain is rendered whatever it holds, label by label (``label_forms`` never raises).
"""

from __future__ import annotations

from typing import Tuple

import idna


def to_unicode_domain(name: str) -> str:
    """IDNA/UTS-46 to the Unicode form the API wants, lowercased: xn--bcher-kva.example -> bücher.example."""
    text = name.strip().rstrip(".")
    if not text:
        raise ValueError("empty domain name")
    return str(idna.decode(text, uts46=True)).lower()


def label_forms(label: str) -> Tuple[str, str]:
    """(Unicode, ASCII) forms of one label; a form IDNA cannot make stays as it is (``_dmarc``, a
    broken ``xn--`` label), the Unicode one lowercased."""
    try:
        uni = idna.decode(label, uts46=True)
    except ValueError:  # idna.IDNAError is a UnicodeError
        uni = label.lower()
    try:
        asc = idna.encode(uni, uts46=True).decode("ascii")
    except ValueError:
        asc = uni
    return uni, asc
