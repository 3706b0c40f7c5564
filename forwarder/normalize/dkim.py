"""DKIM key records (RFC 6376 section 3.6.1, RFC 8463): key type, size, testing flag, revocation.

A record is recognised by its content: a tag list whose first tag is ``v=DKIM1``, or, without a
``v`` tag, one that has a ``p=`` tag holding base64 (or nothing). A DMARC or other ``v=`` record is
never taken for a key. For each side: ``key_type`` (``k``, default ``rsa``), ``key_bits`` when the
key can be read (RSA: the modulus of a SubjectPublicKeyInfo or PKCS#1 key; Ed25519: 256),
``testing`` (``t=y`` among the flags) and ``revoked`` (an empty ``p=``).

A change is *weakened* for any of these reasons (codes as emitted): ``key_revoked`` (a usable key
now has an empty ``p=``), ``record_removed`` / ``record_invalid`` (a key record is gone or no
longer a key record), ``testing_enabled``, ``key_shortened`` (fewer bits than before).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import new_tuple
from .memo import text_cache
from .tags import parse_tags, removal_reason, side_fields

_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
_RSA_OID = bytes.fromhex("2a864886f70d010101")  # 1.2.840.113549.1.1.1


@dataclass(frozen=True)
class DkimKey:
    key_type: str
    key_bits: Optional[int]
    testing: bool
    revoked: bool

    def fields(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"key_type": self.key_type, "testing": self.testing, "revoked": self.revoked}
        if self.key_bits:
            out["key_bits"] = self.key_bits
        return out


@text_cache(1024)  # a trail repeats each key record; the result is immutable, so it may be shared
def parse(text: str) -> Optional[DkimKey]:
    """The key record's properties; None when the text is not a DKIM key record."""
    tags = parse_tags(text)
    version = tags.get("v")
    if version is not None and (next(iter(tags)) != "v" or version.upper() != "DKIM1"):
        return None
    if version is None and ("p" not in tags or not _BASE64.match(tags["p"])):
        return None
    key = re.sub(r"\s+", "", tags.get("p", ""))
    key_type = (tags.get("k") or "rsa").lower()
    flags = {flag.strip().lower() for flag in tags.get("t", "").split(":")}
    return DkimKey(key_type, key_bits(key_type, key) if key else None, "y" in flags, not key)


def is_dkim(value: object) -> bool:
    return isinstance(value, str) and parse(value) is not None


def key_bits(key_type: str, key: str) -> Optional[int]:
    """The key size in bits, or None when it cannot be read."""
    try:
        der = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        return None
    if key_type == "ed25519":
        return 256 if len(der) == 32 else None
    if key_type != "rsa":
        return None
    return _rsa_modulus_bits(der)


def _der(data: bytes, pos: int) -> Optional[Tuple[int, int, int]]:
    """(tag, content start, content end) of the DER element at ``pos``, or None when malformed."""
    if pos + 2 > len(data):
        return None
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or pos + count > len(data):
            return None
        length = int.from_bytes(data[pos : pos + count], "big")
        pos += count
    end = pos + length
    return (tag, pos, end) if end <= len(data) else None


def _rsa_modulus(der: bytes) -> Optional[Tuple[int, int, int]]:
    """The modulus INTEGER of a PKCS#1 RSAPublicKey or of an RSA SubjectPublicKeyInfo."""
    outer = _der(der, 0)
    first = _der(der, outer[1]) if outer and outer[0] == 0x30 else None
    if not first or first[0] == 0x02:  # PKCS#1: SEQUENCE { modulus, exponent }
        return first
    if first[0] != 0x30 or _RSA_OID not in der[first[1] : first[2]]:
        return None
    bits = _der(der, first[2])
    if not bits or bits[0] != 0x03 or bits[2] - bits[1] < 2:
        return None
    inner = _der(der, bits[1] + 1)  # past the unused-bits byte
    modulus = _der(der, inner[1]) if inner and inner[0] == 0x30 else None
    return modulus if modulus and modulus[0] == 0x02 else None


def _rsa_modulus_bits(der: bytes) -> Optional[int]:
    modulus = _rsa_modulus(der)
    value = der[modulus[1] : modulus[2]].lstrip(b"\x00") if modulus else b""
    return len(value) * 8 - (8 - value[0].bit_length()) if value else None


class DkimChange(NamedTuple):  # one per change record: built by new_tuple, without its Python __new__
    before: Optional[DkimKey]
    after: Optional[DkimKey]
    weakened_reasons: List[str]

    @property
    def revoked(self) -> bool:
        return "key_revoked" in self.weakened_reasons

    @property
    def removed(self) -> bool:
        reasons = self.weakened_reasons
        return "record_removed" in reasons or "record_invalid" in reasons

    @property
    def weakened(self) -> bool:
        return bool(self.weakened_reasons)

    def fields(self, out: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The ``emailauth.audit.dkim`` object of an ECS event, written into ``out`` when given (its
        first fields: ``change``)."""
        out = side_fields({} if out is None else out, self.before, self.after)
        out["revoked"] = self.revoked
        out["removed"] = self.removed
        out["weakened"] = bool(self.weakened_reasons)
        out["weakened_reasons"] = self.weakened_reasons
        # a scalar for rules (list matching varies by SIEM): the key stays, but weaker
        out["key_weakened"] = not _KEY_WEAKENING.isdisjoint(self.weakened_reasons)
        return out


_KEY_WEAKENING = frozenset({"testing_enabled", "key_shortened"})


def analyze(before: Optional[str], after: Optional[str]) -> DkimChange:
    """Compare two TXT values; None, blank or non-DKIM text means no key record on that side."""
    old = parse(before) if before else None
    new = parse(after) if after else None
    if old is None:
        return new_tuple(DkimChange, (old, new, []))
    reasons: List[str] = []
    if new is None:
        reasons.append(removal_reason(after))
    else:
        if new.revoked and not old.revoked:
            reasons.append("key_revoked")
        if new.testing and not old.testing:
            reasons.append("testing_enabled")
        if old.key_bits and new.key_bits and new.key_bits < old.key_bits:
            reasons.append("key_shortened")
    return new_tuple(DkimChange, (old, new, reasons))
