"""What an audit record says, derived once and rendered by every format (ECS, CEF, OCSF).

The choices (who is the actor and who the target, which forms a domain has, what ``emailauth.audit``
holds, the one-line message) are documented with the ECS mapping in ``ecs.py``. ``emailauth.audit``
is built by ``audit.py``, the message by ``message.py``; this module names the actor, the target
and the domain and puts the facts together.

Speed: most of a trail is logins, records without changes that differ only in ``created_at``. Their
facts depend on a handful of strings, so they are cached by those (bounded), their risk included; an
analytic that needs ``changes`` (roles, DMARC, SPF, DKIM) never sees a cached record.
"""

from __future__ import annotations

import functools
import re
from types import MappingProxyType
from typing import Any, Dict, Mapping, NamedTuple, Optional, Tuple

from ..domains import label_forms
from ..records import AuditRecord
from . import new_tuple
from .audit import SPEC_FIELDS, Roles, audit_of, role_names
from .changes import as_keyword, as_pair, as_text
from .memo import MAX_TEXT, text_cache
from .message import headline, message
from .risk import Risk, assess
from .shape import shape_of

_EMAIL = re.compile(r"^[^@\s]+@((?:[\w-]+\.)+[\w-]+)\.?$")
_NO_CHANGES: Mapping[str, Any] = MappingProxyType({})
_NO_NAMES: Mapping[Any, str] = MappingProxyType({})
_CACHE_SIZE = 4096  # an organization has few users, domains and actions; a backlog repeats them
_PLAIN = frozenset({str, type(None)})


class Identity(NamedTuple):
    """ECS user fields for one user identifier, and its form in ``related.user``. Cached, so shared:
    copy ``fields`` before changing it."""

    fields: Dict[str, str]
    related: str


_NOBODY = Identity({}, "")


class Kind(NamedTuple):
    """What the action decides: the object type and ``event.category``/``event.type``."""

    object_type: str
    category: str
    types: Tuple[str, ...]


class Domain(NamedTuple):
    given: str
    unicode: str
    ascii: Optional[str]  # None when some label has no ASCII form
    hosts: Tuple[str, ...]  # every form, lowercased and without the root dot: for related.hosts


class Facts(NamedTuple):
    """Everything the formats take from one record besides its time, id and original text.
    Possibly shared with other records (cached): copy a container before changing it."""

    action: str  # filterable_action, else action, else ""
    display_action: Optional[str]  # action as given (its JSON text when not a string)
    kind: Kind
    change_map: Mapping[str, Any]  # changes when it is an object, else empty
    change_names: Mapping[Any, str]  # safe_names(change_map)
    roles: Optional[Roles]  # (before, after) role names of a role change
    audit: Dict[str, Any]  # emailauth.audit without created_at and risk
    risk: Risk
    actor: Identity
    target: Identity  # the affected user; empty fields when there is none
    domain: Optional[Domain]
    related_users: Tuple[str, ...]
    message: str
    cacheable: bool  # the record's user, object and actions are short enough to key a cache


PlainKey = Tuple[Optional[str], Optional[str], Optional[str], Optional[str], str]


def facts(record: AuditRecord) -> Facts:
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


def _short(action: str, display: Optional[str], user: Optional[str], obj: Optional[str]) -> bool:
    """Short enough together to key a cache (``memo.MAX_TEXT``)."""
    return len(action) + len(display or "") + len(user or "") + len(obj or "") <= MAX_TEXT


@functools.lru_cache(maxsize=_CACHE_SIZE)  # called with short strings only
def _plain_facts(
    user: Optional[str], obj: Optional[str], action: Optional[str], filterable: Optional[str], stream: str
) -> Facts:
    """The facts of a record without changes or unknown fields (a login): they depend on these alone."""
    raw = {"user": user, "object": obj, "action": action, "filterable_action": filterable}
    return _derive(raw, stream)


def _derive(raw: Mapping[str, Any], stream_type: str) -> Facts:
    changes = raw.get("changes")
    user, obj, given, filterable = (
        raw.get("user"),
        raw.get("object"),
        raw.get("action"),
        raw.get("filterable_action"),
    )
    # The subject is cached when these are short strings or nulls (``is_plain``): a trail repeats them.
    subject = (_cached_subject if is_plain((user, obj, given, filterable, stream_type)) else _subject_of)(
        user, obj, given, filterable, stream_type, bool(changes)
    )
    related = subject.related_users
    if changes and isinstance(changes, dict):
        change_map: Mapping[str, Any] = changes
        shape = shape_of(changes)
        names, listed = shape.names, shape.listed
        roles = role_names(changes) if "roles" in changes else None  # a call less for most changes
        if shape.email_keys:
            related = _related_users(related, changes, shape.email_keys)
    else:
        change_map, names, listed, roles = _NO_CHANGES, _NO_NAMES, "", None
    audit = audit_of(raw, subject.head, change_map, names, roles)
    action = subject.action
    return new_tuple(  # Facts(...) without the named tuple's __new__, a Python function
        Facts,
        (
            action,
            subject.display,
            subject.kind,
            change_map,
            names,
            roles,
            audit,
            assess(action, audit),
            subject.actor,
            subject.target,
            subject.domain,
            related,
            message(subject.headline, action, subject.display, audit, listed),
            subject.cacheable,
        ),
    )


class Subject(NamedTuple):
    """What the facts take from a record's user, object and actions alone, not from its changes: the
    same for every record naming the same ones, so cached by them. Shared: copy
    ``head`` before changing it."""

    action: str
    display: Optional[str]
    kind: Kind
    actor: Identity
    target: Identity
    domain: Optional[Domain]
    head: Dict[str, Any]  # emailauth.audit's first fields: object_type, object, action, filterable_action
    headline: str  # the message's "who did what to what"
    related_users: Tuple[str, ...]  # the actor's and the target's, sorted
    cacheable: bool


def _subject_of(
    user: Any, obj: Any, given: Any, filterable: Any, stream_type: str, has_changes: bool
) -> Subject:
    display, user_text, obj_text = as_text(given), as_text(user), as_text(obj)
    action = as_text(filterable) or display or ""
    kind = _kind(action, stream_type, has_changes)
    head: Dict[str, Any] = {"object_type": kind.object_type}
    for name, value in (("object", obj), ("action", given), ("filterable_action", filterable)):
        if value is not None:
            head[name] = value if isinstance(value, str) else as_keyword(value)
    actor = _identity(user_text)
    target = _target_user(obj_text, action, kind.object_type)
    domain = _domain(obj) if kind.object_type == "domain" else None
    related = {actor.related, target.related}
    related.discard("")
    return Subject(
        action,
        display,
        kind,
        actor,
        target,
        domain,
        head,
        headline(user_text, action, obj_text, domain),
        tuple(sorted(related)),
        _short(action, display, user_text, obj_text),
    )


_cached_subject = functools.lru_cache(maxsize=_CACHE_SIZE)(_subject_of)  # short strings and nulls only


@text_cache(_CACHE_SIZE)
def _kind(action: str, stream_type: str, has_changes: bool) -> Kind:
    """The object type (``user.*`` and ``domain.*`` say it, else the stream's), the category by
    object type and the type by the action's verb."""
    prefix = action.partition(".")[0]
    object_type = prefix if prefix in ("user", "domain") and "." in action else stream_type
    if action == "user.login":
        return Kind(object_type, "authentication", ("start",))
    verb = action.rpartition(".")[2]
    if verb == "create":
        change = "creation"
    elif verb in ("destroy", "delete"):
        change = "deletion"
    elif verb.startswith("update") or has_changes:
        change = "change"
    else:
        change = "info"
    if object_type == "user":
        return Kind(object_type, "iam", ("user", change))
    return Kind(object_type, "configuration", (change,))


def _identity(text: Optional[str]) -> Identity:
    """ECS user fields for one user identifier (``as_text`` of the record's value)."""
    return _identity_of(text) if text else _NOBODY


@text_cache(_CACHE_SIZE)
def _identity_of(text: str) -> Identity:
    match = _EMAIL.match(text)
    if match:
        return Identity({"id": text, "email": text, "domain": match.group(1).lower()}, text.lower())
    return Identity({"id": text, "name": text}, text)


def _target_user(text: Optional[str], action: str, object_type: str) -> Identity:
    """The affected user (``text`` is ``as_text`` of the record's object). A user stream also returns
    other objects' actions under unknown names (``dkim_record_source.update`` on a domain): for those
    only an email address is taken as a user."""
    if object_type != "user":
        return _NOBODY
    target = _identity(text)
    return target if action.startswith("user.") or "email" in target.fields else _NOBODY


def _related_users(
    known: Tuple[str, ...], change_map: Mapping[str, Any], keys: Tuple[Any, ...]
) -> Tuple[str, ...]:
    """``known`` (the subject's) with the email addresses the changes of these keys hold, sorted."""
    found = set(known)
    for key in keys:
        value = change_map[key]
        sides = as_pair(value) or [value]
        found.update(side.lower() for side in sides if isinstance(side, str) and _EMAIL.match(side))
    return tuple(sorted(found))


_label_forms = text_cache(_CACHE_SIZE)(label_forms)  # IDNA is the costly part


def _domain(value: Any) -> Optional[Domain]:
    given = as_text(value)
    return _domain_of(given) if given else None


@text_cache(_CACHE_SIZE)
def _domain_of(given: str) -> Domain:
    """The forms of a domain name; labels IDNA cannot read stay as they are, lowercased (``_dmarc``,
    a broken ``xn--`` label)."""
    forms = [_label_forms(label) for label in given.rstrip(".").split(".")]
    ascii_form = ".".join(asc for _, asc in forms)
    unicode_form = ".".join(uni for uni, _ in forms)
    ascii_or_none = ascii_form if ascii_form.isascii() else None
    hosts = (given.lower().rstrip("."), unicode_form, ascii_or_none)
    return Domain(given, unicode_form, ascii_or_none, tuple(sorted({host for host in hosts if host})))
