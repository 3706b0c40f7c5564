"""Audit record -> one CEF line (MAPPING.md, section CEF; escaping per ArcSight's CEF standard v25).

``CEF:0|<vendor>|<product>|<version>|<filterable_action>|<action>|<severity>|<extension>``. The
fields come from the ECS event (``ecs.to_ecs``) so every format tells the same story.

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
* ``msg``: the ECS one-line summary (1023).

Severity (shared with OCSF): ``high`` (8) for a grant of a role whose name contains "admin" and for
a weakened DMARC policy, ``low`` (3) for logins, ``medium`` (5) for everything else.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..events import Event
from ..records import AuditRecord
from . import NormalizeOptions
from .changes import as_pair, as_text, safe_names
from .ecs import to_ecs

SEVERITY = {"low": 3, "medium": 5, "high": 8}
# ArcSight field lengths (characters) for the keys we fill.
LIMITS = {"act": 63, "suser": 1023, "duser": 1023, "dhost": 1023, "cat": 1023, "msg": 1023}
CS_LIMIT = 4000
NAME_LIMIT = 512
SIGNATURE_LIMIT = 1023
EVENT_ID_SLOT = 6
CHANGED_KEYS_SLOT = 5
PAIR_SLOTS = 2  # cs1..cs4
_LINE_BREAKS = re.compile(r"[\r\n]+")
_FIRST_KEYS = {"roles": 0, "dmarc_txt_record": 1}  # the changes a SIEM rule most likely looks at


def format_cef(record: AuditRecord, opts: NormalizeOptions) -> Event:
    return Event(
        id=record.event_id, time_us=record.ts_us, body=to_cef(record, opts).encode("utf-8"), is_json=False
    )


def to_cef(record: AuditRecord, opts: NormalizeOptions) -> str:
    doc = to_ecs(record, opts, include_original=False)
    signature = doc["event"].get("action") or "unknown"
    name = as_text(record.raw.get("action")) or signature
    header = [
        "CEF:0",
        escape_header(opts.vendor),
        escape_header(opts.product),
        escape_header(opts.product_version),
        escape_header(signature, SIGNATURE_LIMIT),
        escape_header(name, NAME_LIMIT),
        str(SEVERITY[severity(doc)]),
    ]
    return (
        "|".join(header)
        + "|"
        + " ".join(f"{key}={escape_value(value)}" for key, value in extension(record, doc))
    )


def extension(record: AuditRecord, doc: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """The extension as (key, unescaped value) pairs, in order, within ArcSight's lengths."""
    user = doc.get("user", {})
    fields: Dict[str, Optional[str]] = {
        "rt": str(record.ts_us // 1000),
        "act": doc["event"].get("action"),
        "suser": user.get("id"),
        "duser": user.get("target", {}).get("id"),
        "dhost": doc.get("entity", {}).get("target", {}).get("name"),
        "cat": doc["event"]["category"][0],
        "outcome": doc["event"]["outcome"],
    }
    pairs = [
        (key, cut(value, LIMITS[key]) if key in LIMITS else value) for key, value in fields.items() if value
    ]
    pairs += _custom_strings(record, record.event_id)
    pairs.append(("msg", cut(doc["message"], LIMITS["msg"])))
    return pairs


def _custom_strings(record: AuditRecord, event_id: str) -> List[Tuple[str, str]]:
    changes = record.raw.get("changes")
    change_map: Mapping[str, Any] = changes if isinstance(changes, dict) else {}
    names = safe_names(change_map)
    ordered = sorted(names, key=lambda key: (_FIRST_KEYS.get(key, len(_FIRST_KEYS)), names[key]))
    slots: List[Tuple[str, str]] = []
    for key in [key for key in ordered if as_pair(change_map[key])][:PAIR_SLOTS]:
        for side, value in zip(("before", "after"), as_pair(change_map[key]) or ()):
            slots.append((f"{names[key]} {side}", as_text(value) or ""))
    out: List[Tuple[str, str]] = []
    for number, (label, value) in enumerate(slots, start=1):
        if value:
            out += [(f"cs{number}Label", label), (f"cs{number}", cut(value, CS_LIMIT))]
    if names:
        changed = ",".join(sorted(names.values()))
        out += [
            (f"cs{CHANGED_KEYS_SLOT}Label", "changedKeys"),
            (f"cs{CHANGED_KEYS_SLOT}", cut(changed, CS_LIMIT)),
        ]
    out += [(f"cs{EVENT_ID_SLOT}Label", "eventId"), (f"cs{EVENT_ID_SLOT}", event_id)]
    return out


def severity(doc: Mapping[str, Any]) -> str:
    """``low``, ``medium`` or ``high`` for an ECS event (see the module docstring)."""
    if doc["event"].get("action") == "user.login":
        return "low"
    audit = doc["emailauth"]["audit"]
    added = audit.get("roles", {}).get("added", [])
    if any("admin" in role.lower() for role in added) or audit.get("dmarc", {}).get("weakened"):
        return "high"
    return "medium"


def escape_header(text: str, limit: Optional[int] = None) -> str:
    """One header field: line breaks become spaces, then the cut (when limited), then escaping."""
    flat = _LINE_BREAKS.sub(" ", text)
    if limit is not None:
        flat = cut(flat, limit)
    return flat.replace("\\", "\\\\").replace("|", "\\|")


def escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("=", "\\=").replace("\r", "\\r").replace("\n", "\\n")


def cut(text: str, limit: int) -> str:
    """At most ``limit`` characters; a cut value ends with ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
