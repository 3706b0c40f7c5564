"""Audit record -> one CEF line (MAPPING.md, section CEF; escaping per ArcSight's CEF standard v25).

``CEF:0|<vendor>|<product>|<version>|<filterable_action>|<action>|<severity>|<extension>``. The
fields come from the record's facts (``facts.py``), as the ECS event's do, so every format tells the
same story.

Header: ``\\`` and ``|`` escaped, every run of CR and LF replaced by one space. Extension values:
``\\`` and ``=`` escaped, CR and LF written as ``\\r`` and ``\\n``; nothing else is touched
(UTF-8, tabs and other control characters pass as they are; rsyslog rewrites NUL as ``#000`` and,
unless told otherwise, other control characters as ``#ooo``). Values over ArcSight's field lengths
are cut to the limit, the last character replaced by ``…``; empty values are left out.

Extension keys, in this order:

* ``rt`` epoch milliseconds of ``created_at``; ``act`` filterable_action (63); ``suser`` the actor,
  ``duser`` the affected user of a user action, ``dhost`` the domain as given (1023 each);
  ``cat`` the ECS category (``iam``, ``authentication``, ``configuration``); ``outcome=success``.
* ``cs1``..``cs4``: before and after of up to two change pairs (4000 each), ``roles`` and
  ``dmarc_txt_record`` first, then the others by name; labels ``<name> before`` / ``<name> after``
  with the field-name form of ``changes.py``. A string stays as it is, anything else is its JSON
  text (``["AuditingRole"]``), null is left out.
* ``cs5`` (label ``changedKeys``): every change key, comma separated, so a SIEM sees the changes
  that had no slot. ``cs6`` (label ``eventId``): the event id, 64 hex characters, which does not
  fit ``externalId`` (40).
* ``cn1`` (label ``riskScore``): ``emailauth.audit.risk.score``; ``reason``: its reason codes, comma
  separated, when there are any (1023).
* ``msg``: the ECS one-line summary (1023).

Severity: the event's risk score (``emailauth.audit.risk.score``, see ``risk.py``) divided by 10,
rounded down: 3 for a login, 5 for an ordinary change, 8 for an admin role granted or a weakened
DMARC, SPF or DKIM record, 9 for a self-granted admin role or an SPF record ending in ``+all``.
"""

from __future__ import annotations

import functools
import re
from typing import Any, List, Mapping, NamedTuple, Optional, Tuple

from ..events import Event
from ..records import AuditRecord
from . import NormalizeOptions, new_tuple
from .changes import as_text, safe_names
from .facts import Facts, PlainKey, facts, plain_facts
from .memo import Memo
from .plain import PlainCache, TextCache, around_created_at

# ArcSight field lengths (characters) for the keys we fill.
LIMITS = {"act": 63, "suser": 1023, "duser": 1023, "dhost": 1023, "cat": 1023, "reason": 1023, "msg": 1023}
CS_LIMIT = 4000
NAME_LIMIT = 512
SIGNATURE_LIMIT = 1023
EVENT_ID_SLOT = 6
CHANGED_KEYS_SLOT = 5
PAIR_SLOTS = 2  # cs1..cs4
_LINE_BREAKS = re.compile(r"[\r\n]+")
_FIRST_KEYS = {"roles": 0, "dmarc_txt_record": 1}  # the changes a SIEM rule most likely looks at
_OTHER_KEYS = len(_FIRST_KEYS)
_EVENT_ID_LABEL = f"cs{EVENT_ID_SLOT}Label=eventId cs{EVENT_ID_SLOT}="
_MSG_LIMIT = LIMITS["msg"]


def format_cef(record: AuditRecord, opts: NormalizeOptions) -> Event:
    raw, event_id, ts_us, object_type, data, created = record  # one unpacking: cheaper than by name
    line = None
    if not raw.get("changes"):  # changes holding anything: no plain key, so no cached line serves
        if created:  # a login: its line found by its text (``TextCache``), cheaper than by its key
            line = _LOGIN_LINES.get(opts, data, object_type, created.encode())
        if line is None:
            line = _plain_line(record, opts)
    if line is None:
        return new_tuple(Event, (event_id, ts_us, to_cef(record, opts).encode("utf-8"), False))
    body = line % (ts_us // 1000, event_id.encode())  # the event id is hex: nothing to escape
    return new_tuple(Event, (event_id, ts_us, body, False))


def to_cef(record: AuditRecord, opts: NormalizeOptions) -> str:
    """The line rendered from the record's facts (``format_cef`` fills a login's cached line)."""
    head, middle, tail = _parts(facts(record), opts)
    return f"{head}{record.ts_us // 1000} {middle}{record.event_id}{tail}"  # hex: nothing to escape


class Parts(NamedTuple):
    """The line around its two values from the record itself: ``rt`` and the event id."""

    head: str  # the header and "rt="
    middle: str  # from act to "cs6="
    tail: str  # from cn1Label to msg


def _plain_line(record: AuditRecord, opts: NormalizeOptions) -> Optional[bytes]:
    """The line of a record with a plain key (``_PLAIN_LINES``), also kept for the records whose text
    differs from its only in created_at when its text can serve (``around_created_at``); None for a
    record without a plain key."""
    line = _PLAIN_LINES.get(record, opts)
    if line is not None and record.time_text:
        parts = around_created_at(record)
        if parts is not None:
            _LOGIN_LINES.put(record, opts, parts, line)
    return line


def _line_format(key: PlainKey, opts: NormalizeOptions) -> bytes:
    """The line of every record with this plain key (a login), its facts shared: a ``bytes %`` format
    of ``rt`` (``%d``) and the event id (``%s``), its own ``%`` doubled. One ``%`` fills it, in C."""
    parts = _parts(plain_facts(key), opts)
    head, middle, tail = (part.encode("utf-8").replace(b"%", b"%%") for part in parts)
    return head + b"%d " + middle + b"%s" + tail


_PLAIN_LINES: PlainCache[bytes] = PlainCache(_line_format, 4096)  # plain keys are short
_LOGIN_LINES: TextCache[bytes] = TextCache(4096)  # a plain record's text is short (``around_created_at``)


def _parts(found: Facts, opts: NormalizeOptions) -> Parts:
    signature = found.action or "unknown"
    name = found.display_action or signature
    level = found.risk.score // 10  # the severity (see the module docstring)
    head = (_head if found.cacheable else _head.__wrapped__)(
        opts.vendor, opts.product, opts.product_version, signature, name, level
    )
    return new_tuple(Parts, (head, *_extension(found)))  # without the named tuple's Python __new__


@functools.lru_cache(maxsize=4096)  # one product per run, few actions; called with short strings only
def _head(vendor: str, product: str, version: str, signature: str, name: str, level: int) -> str:
    """The header, escaped, and ``rt=``."""
    product_fields = [escape_header(vendor), escape_header(product), escape_header(version)]
    action_fields = [escape_header(signature, SIGNATURE_LIMIT), escape_header(name, NAME_LIMIT), str(level)]
    return "|".join(["CEF:0", *product_fields, *action_fields]) + "|rt="


def _extension(found: Facts) -> Tuple[str, str]:
    """The extension, escaped: ``key=value`` in order, within ArcSight's lengths, empty values left out;
    before ``rt``'s value, between it and the event id, and after that."""
    parts = [
        (_subject if found.cacheable else _subject.__wrapped__)(
            found.action,
            found.actor.fields.get("id"),
            found.target.fields.get("id") if found.action != "user.login" else None,
            found.domain.given if found.domain else None,
            found.kind.category,
        ),
    ]
    if found.change_map:
        _add_change_fields(parts, found.change_map)
    parts.append(_EVENT_ID_LABEL)
    score, reasons = found.risk
    tail = f" cn1Label=riskScore cn1={score}"
    if reasons:
        tail += " reason=" + escape_value(cut(",".join(reasons), LIMITS["reason"]))
    message = found.message  # at most 1024 characters: rarely cut
    if len(message) > _MSG_LIMIT:
        message = cut(message, _MSG_LIMIT)
    return " ".join(parts), f"{tail} msg={escape_value(message)}"


@functools.lru_cache(maxsize=4096)  # a trail repeats its actors, objects and actions; short strings only
def _subject(
    action: str, suser: Optional[str], duser: Optional[str], dhost: Optional[str], category: str
) -> str:
    """``act``, ``suser``, ``duser``, ``dhost``, ``cat`` and ``outcome``, escaped."""
    fields = (
        ("act", action),
        ("suser", suser),
        ("duser", duser),
        ("dhost", dhost),
        ("cat", category),
        ("outcome", "success"),
    )
    return " ".join(
        f"{key}={escape_value(cut(value, LIMITS[key]) if key in LIMITS else value)}"
        for key, value in fields
        if value
    )


def _add_change_fields(out: List[str], change_map: Mapping[str, Any]) -> None:
    """Adds cs1..cs4 (up to two change pairs) and cs5 (every change key) to ``out`` as escaped
    ``key=value`` texts."""
    plan = _PLANS[tuple(change_map)]
    slot = 0
    for key, labels in plan.ranked:
        pair = change_map[key]
        if not (isinstance(pair, list) and len(pair) == 2):  # a pair (changes.as_pair)
            continue
        for label, value in zip(labels[slot], pair):
            if value is None:
                continue
            text = value if value.__class__ is str else as_text(value)  # as_text, its usual case inlined
            if text:
                if len(text) > CS_LIMIT:
                    text = cut(text, CS_LIMIT)
                out.append(label + escape_value(text))
        slot += 1
        if slot == PAIR_SLOTS:
            break
    out.append(plan.changed)


class Plan(NamedTuple):
    """What the keys of a change map decide in the CEF line, whatever their values."""

    # (key, labels of its sides in each pair slot: ("cs1Label=<name> before cs1=", "cs2Label=...")),
    # ``roles`` and ``dmarc_txt_record`` first, then the others by field name
    ranked: Tuple[Tuple[Any, Tuple[Tuple[str, str], ...]], ...]
    changed: str  # cs5: every change key


def _plan(keys: Tuple[Any, ...]) -> Plan:
    """The plan of a change map's keys; their safe names hold nothing to escape (``[a-z0-9_]``)."""
    names = safe_names(keys)
    order = sorted((_FIRST_KEYS.get(key, _OTHER_KEYS), names[key], key) for key in keys)  # names are unique
    ranked = tuple((key, tuple(_labels(name, slot) for slot in range(PAIR_SLOTS))) for _, name, key in order)
    changed = cut(",".join(sorted(names.values())), CS_LIMIT)
    return Plan(ranked, f"cs{CHANGED_KEYS_SLOT}Label=changedKeys cs{CHANGED_KEYS_SLOT}={changed}")


def _labels(name: str, slot: int) -> Tuple[str, str]:
    """The labels of a pair's sides in a slot (0: cs1 and cs2, 1: cs3 and cs4), up to their values."""
    before, after = 2 * slot + 1, 2 * slot + 2
    return f"cs{before}Label={name} before cs{before}=", f"cs{after}Label={name} after cs{after}="


# The plan of a change map's keys, ``_PLANS[tuple(change_map)]``: records of one kind carry the same
# keys, so a plan is mostly found by one lookup, no Python call; kept when the keys are text (JSON
# keys are; no 1 and true to tell apart) and short (``memo.Memo``).
_PLANS = Memo(_plan, 4096)


def escape_header(text: str, limit: Optional[int] = None) -> str:
    """One header field: line breaks become spaces, then the cut (when limited), then escaping."""
    flat = _LINE_BREAKS.sub(" ", text)
    if limit is not None:
        flat = cut(flat, limit)
    return flat.replace("\\", "\\\\").replace("|", "\\|")


def escape_value(text: str) -> str:
    if "\\" not in text and "\r" not in text and "\n" not in text:
        return text.replace("=", "\\=")  # most values: three scans are cheaper than three copies
    return text.replace("\\", "\\\\").replace("=", "\\=").replace("\r", "\\r").replace("\n", "\\n")


def cut(text: str, limit: int) -> str:
    """At most ``limit`` characters; a cut value ends with ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
