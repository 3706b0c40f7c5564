"""The audit record as the forwarder carries it: the raw object plus what is derived from it once."""

from __future__ import annotations

from hashlib import sha256 as _sha256
from typing import Any, Mapping, NamedTuple

from .jsonutil import NATIVE_DEPTH, canonical, canonical_native
from .timeutil import format_us, parse_canonical, parse_iso_any

# Audit records are a few levels deep; far deeper ones would exhaust the normalizers' recursion.
# The bound orjson enforces as it writes the canonical text: a record it writes needs no walk.
MAX_DEPTH = NATIVE_DEPTH


class InvalidRecord(ValueError):
    """A record that cannot be placed in time (no usable created_at) or is not an object."""


class AuditRecord(NamedTuple):
    """One audit record. ``raw`` is exactly what the API returned; the rest is derived from it.

    A named tuple: immutable like a frozen dataclass, at a third of its cost to build (one per record).
    """

    raw: Mapping[str, Any]
    event_id: str
    ts_us: int
    object_type: str = "user"  # the object_type of the stream that fetched it
    # raw serialized canonically, the bytes event_id hashes (b"" in a record built by hand): carried so
    # that event.original and the raw format do not serialize the record again. A pass holds at most
    # FORWARDER_MAX_RECORDS_PER_PASS records per stream, so this costs little memory.
    serialized: bytes = b""
    # created_at when it is already in the canonical form (format_us of ts_us, as the API sends it),
    # else "": carried so that formats writing that form neither match nor format it again.
    time_text: str = ""

    def __repr__(self) -> str:  # without the raw record: it can be long
        return (
            f"AuditRecord(event_id={self.event_id!r}, ts_us={self.ts_us}, object_type={self.object_type!r})"
        )

    @property
    def action(self) -> str:
        """The machine action name (filterable_action, falling back to action)."""
        value = self.raw.get("filterable_action") or self.raw.get("action") or ""
        return value if isinstance(value, str) else str(value)

    @property
    def actor(self) -> str:
        value = self.raw.get("user")
        return value if isinstance(value, str) else ""

    @property
    def object(self) -> str:
        value = self.raw.get("object")
        return value if isinstance(value, str) else ""

    @property
    def canonical(self) -> bytes:
        """``raw`` serialized canonically (sorted keys, compact, UTF-8): the SHA-256 of it is event_id."""
        return self.serialized or canonical(self.raw)

    @property
    def timestamp(self) -> str:
        """``ts_us`` in the canonical form (``timeutil.format_us``)."""
        return self.time_text or format_us(self.ts_us)

    @property
    def sort_key(self) -> tuple[int, str]:
        return (self.ts_us, self.event_id)


def event_id(raw: Mapping[str, Any]) -> str:
    """Lowercase hex SHA-256 of the record serialized canonically (sorted keys, compact, UTF-8)."""
    return _sha256(canonical(raw)).hexdigest()


def parse_record(raw: Any, object_type: str = "user") -> AuditRecord:
    """Wrap one element of an audits response. Raises InvalidRecord naming the problem."""
    if not isinstance(raw, dict):
        raise InvalidRecord(f"audit record is a {type(raw).__name__}, not an object")
    time_text = raw.get("created_at")
    if not isinstance(time_text, str):
        raise InvalidRecord(f"audit record has no created_at string (got {type(time_text).__name__})")
    try:
        ts = parse_canonical(time_text)
        if ts is None:
            ts, time_text = parse_iso_any(time_text), ""  # carried only in the canonical form
    except (ValueError, OverflowError) as exc:
        raise InvalidRecord(f"audit record created_at is unusable: {exc}") from None
    data = canonical_native(raw)  # nearly every record: nested MAX_DEPTH levels at most
    if data is None:
        try:
            data = canonical(raw)
        except ValueError as exc:  # a lone surrogate or undecodable bytes: it has no UTF-8 form
            _check_depth(raw)  # the nesting, when it is also too deep, is named first
            raise InvalidRecord(f"audit record holds text that is not valid Unicode ({exc})") from None
        # Each level opens a bracket: a record with few brackets needs no walk. Counted as what
        # deleting them removes: one C pass, cheaper than two bytes.count calls.
        if len(data) - len(data.translate(None, _BRACKETS)) > MAX_DEPTH:
            _check_depth(raw)
    # tuple.__new__: the named tuple's own __new__ is a Python function, a third of this call's cost.
    return _new_record(
        AuditRecord,
        (raw, _sha256(data).hexdigest(), ts, object_type, data, time_text),
    )


_new_record = tuple.__new__
_BRACKETS = b"{["


def _check_depth(raw: Mapping[str, Any]) -> None:
    if depth(raw) > MAX_DEPTH:
        raise InvalidRecord(f"audit record is nested more than {MAX_DEPTH} levels deep")


def depth(value: Any) -> int:
    """How deeply containers nest in ``value``, counted without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:  # past the limit the answer is known
                stack.extend((child, level + 1) for child in item if isinstance(child, (dict, list)))
    return deepest
