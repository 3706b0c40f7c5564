"""What an audit record says, derived once and rendered by every format (ECS, CEF, OCSF).

The choices (who is the actor and who the target, which forms a domain has, what ``emailauth.audit``
holds, the one-line message) are documented with the ECS mapping in ``ecs.py``. What the record's
user, object and actions decide is in ``subject.py``, ``emailauth.audit`` is built by ``audit.py``,
the message by ``message.py``; this module puts the facts together.

Speed: most of a trail is logins, records without changes that differ only in ``created_at``. Their
facts depend on a handful of strings, so they are cached by those (bounded), their risk included; an
analytic that needs ``changes`` (roles, DMARC, SPF, DKIM) never sees a cached record. A change
record's subject is cached the same way, and what its change keys decide by the set of keys
(``shape.py``); its values are read afresh.
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from ..records import AuditRecord
from . import new_tuple
from .audit import SPEC_FIELDS, Roles, audit_of, role_names
from .changes import as_pair
from .memo import MAX_TEXT
from .message import message
from .risk import Risk, with_reasons
from .shape import shape_of
from .subject import EMAIL, SUBJECTS, Domain, Identity, Kind, subject_of

_NO_CHANGES: Mapping[str, Any] = MappingProxyType({})
_NO_NAMES: Mapping[Any, str] = MappingProxyType({})
_CACHE_SIZE = 4096  # an organization has few users, domains and actions; a backlog repeats them
_PLAIN = frozenset({str, type(None)})


class Facts(NamedTuple):
    """Everything the formats take from one record besides its time, id and original text.
    Possibly shared with other records (cached): copy a container before changing it."""

    action: str  # filterable_action, else action, else ""
    display_action: Optional[str]  # action as given (its JSON text when not a string)
    kind: Kind
    change_map: Mapping[str, Any]  # changes when it is an object, else empty
    change_names: Mapping[Any, str]  # safe_names(change_map)
    roles: Optional[Roles]  # (before, after) role names of a role change
    audit: Dict[str, Any]  # emailauth.audit without risk, created_at None (``audit.audit_of``)
    risk: Risk
    actor: Identity
    target: Identity  # the affected user; empty fields when there is none
    domain: Optional[Domain]
    related_users: Tuple[str, ...]
    message: str
    cacheable: bool  # the record's user, object and actions are short enough to key a cache


PlainKey = Tuple[Optional[str], Optional[str], Optional[str], Optional[str], str]


def facts(record: AuditRecord) -> Facts:
    raw = record.raw
    changes = raw.get("changes")
    if changes and changes.__class__ is dict:  # a change record (plain_key has none): no key looked for
        return _derive(raw, record.object_type)
    key = plain_key(record)
    return plain_facts(key) if key else derive(record)


def derive(record: AuditRecord) -> Facts:
    """The facts of a record ``plain_key`` has no key for, derived afresh."""
    return _derive(record.raw, record.object_type)


def plain_key(record: AuditRecord) -> Optional[PlainKey]:
    """For a record without changes or unknown fields (a login), the strings its facts depend on
    (user, object, action, filterable_action, stream type), when short enough to key a cache."""
    key = candidate_key(record)
    return key if key and is_plain(key) else None


def candidate_key(record: AuditRecord) -> Optional[Tuple[Any, ...]]:
    """``plain_key`` before its checks of the values: they may be any JSON value, or too long."""
    raw = record.raw
    changes = raw.get("changes")
    if changes is not None and (changes.__class__ is not dict or changes):  # no {} built to compare
        return None
    if not SPEC_FIELDS.issuperset(raw):
        return None
    return (
        raw.get("user"),
        raw.get("object"),
        raw.get("action"),
        raw.get("filterable_action"),
        record.object_type,
    )


def is_plain(key: Tuple[Any, ...]) -> bool:
    """A ``candidate_key`` of strings or nulls only (a cache key must not confuse 1 with true or
    1.0), short enough to key a cache."""
    user, obj, action, filterable, _ = key
    return (
        type(user) in _PLAIN
        and type(obj) in _PLAIN
        and type(action) in _PLAIN
        and type(filterable) in _PLAIN
        and len(user or "") + len(obj or "") + len(action or "") + len(filterable or "") <= MAX_TEXT
    )


def plain_facts(key: PlainKey) -> Facts:
    """The facts of the records with this ``plain_key`` (cached: shared)."""
    return _plain_facts(*key)


@functools.lru_cache(maxsize=_CACHE_SIZE)  # called with short strings only
def _plain_facts(
    user: Optional[str], obj: Optional[str], action: Optional[str], filterable: Optional[str], stream: str
) -> Facts:
    """The facts of a record without changes or unknown fields (a login): they depend on these alone."""
    raw = {"user": user, "object": obj, "action": action, "filterable_action": filterable}
    return _derive(raw, stream)


def _derive(raw: Mapping[str, Any], stream_type: str) -> Facts:
    changes = raw.get("changes")
    key = (raw.get("user"), raw.get("object"), raw.get("action"), raw.get("filterable_action"), stream_type)
    try:  # a trail repeats them
        subject = SUBJECTS[bool(changes)][key]
    except TypeError:  # a list or an object among them: no key
        subject = subject_of(*key, bool(changes))
    # unpacked at once: a named tuple's field read by name is a descriptor call
    (action, display, kind, actor, target, domain, head, headline, related, cacheable, self_change, risk) = (
        subject
    )
    if changes and isinstance(changes, dict):
        change_map: Mapping[str, Any] = changes
        names, listed, email_keys = shape_of(tuple(changes))
        roles = role_names(changes) if "roles" in changes else None  # a call less for most changes
        if email_keys:
            related = _related_users(related, changes, email_keys)
    else:
        change_map, names, listed, roles = _NO_CHANGES, _NO_NAMES, "", None
    reasons: List[str] = []
    audit = audit_of(raw, head, change_map, names, roles, self_change, reasons)
    return new_tuple(  # Facts(...) without the named tuple's __new__, a Python function
        Facts,
        (
            action,
            display,
            kind,
            change_map,
            names,
            roles,
            audit,
            with_reasons(risk, reasons),
            actor,
            target,
            domain,
            related,
            message(headline, action, display, audit, listed),
            cacheable,
        ),
    )


def _related_users(
    known: Tuple[str, ...], change_map: Mapping[str, Any], keys: Tuple[Any, ...]
) -> Tuple[str, ...]:
    """``known`` (the subject's) with the email addresses the changes of these keys hold, sorted."""
    found = set(known)
    for key in keys:
        value = change_map[key]
        sides = as_pair(value) or [value]
        found.update(side.lower() for side in sides if isinstance(side, str) and EMAIL.match(side))
    return tuple(sorted(found))
