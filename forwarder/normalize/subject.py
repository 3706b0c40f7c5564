"""What a record's facts take from its user, object and actions alone, not from its changes: who is
the actor and who the target, which forms a domain has, what the action decides (object type, ECS
category and type), the first fields of ``emailauth.audit``, the message's headline and the risk of a
record without analyses.

A trail repeats its users, domains and actions, and a change record names them as a login does, so
all of it is cached by those values when they are short strings or nulls (``SUBJECTS``).
"""

from __future__ import annotations

import re
from typing import Any, Dict, NamedTuple, Optional, Tuple

from ..domains import label_forms
from .changes import as_keyword, as_text
from .memo import MAX_TEXT, Memo, text_cache
from .message import headline
from .risk import Risk, action_risk
from .roles import same_user

EMAIL = re.compile(r"^[^@\s]+@((?:[\w-]+\.)+[\w-]+)\.?$")
_CACHE_SIZE = 4096  # an organization has few users, domains and actions; a backlog repeats them


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


def _short(action: str, display: Optional[str], user: Optional[str], obj: Optional[str]) -> bool:
    """Short enough together to key a cache (``memo.MAX_TEXT``)."""
    return len(action) + len(display or "") + len(user or "") + len(obj or "") <= MAX_TEXT


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
    # emailauth.audit's first fields: created_at (None: each record's, in place when rendered),
    # object_type, object, action, filterable_action
    head: Dict[str, Any]
    headline: str  # the message's "who did what to what"
    related_users: Tuple[str, ...]  # the actor's and the target's, sorted
    cacheable: bool
    self_change: bool  # the user is the object (``roles.same_user``)
    risk: Risk  # ``risk.action_risk``: of a record whose analyses (roles, DMARC, SPF, DKIM) find nothing


def subject_of(
    user: Any, obj: Any, given: Any, filterable: Any, stream_type: str, has_changes: bool
) -> Subject:
    display, user_text, obj_text = as_text(given), as_text(user), as_text(obj)
    action = as_text(filterable) or display or ""
    kind = _kind(action, stream_type, has_changes)
    head: Dict[str, Any] = {"created_at": None, "object_type": kind.object_type}
    for name, value in (("object", obj), ("action", given), ("filterable_action", filterable)):
        if value is not None:
            head[name] = value if isinstance(value, str) else as_keyword(value)
    actor = identity(user_text)
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
        headline(user_text, action, _shown(obj_text, domain)),
        tuple(sorted(related)),
        _short(action, display, user_text, obj_text),
        same_user(user_text, obj_text),
        action_risk(action),
    )


def _shown(obj_text: Optional[str], domain: Optional[Domain]) -> Optional[str]:
    """The object as a headline names it: a domain given in another form than its Unicode one with
    that form too."""
    if domain and domain.unicode != domain.given.lower().rstrip("."):
        return f"{domain.given} ({domain.unicode})"
    return obj_text


def _without_changes(key: Tuple[Any, Any, Any, Any, str]) -> Subject:
    return subject_of(*key, False)


def _with_changes(key: Tuple[Any, Any, Any, Any, str]) -> Subject:
    return subject_of(*key, True)


# ``subject_of`` by (user, object, action, filterable_action, stream type), without and with changes:
# looked up by the caller (``SUBJECTS[has_changes][key]``, no Python call for a hit), and kept when
# the values are short texts or nulls (``memo.Memo``); a list or an object among them raises
# TypeError (call ``subject_of``).
SUBJECTS = (Memo(_without_changes, _CACHE_SIZE), Memo(_with_changes, _CACHE_SIZE))


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


def identity(text: Optional[str]) -> Identity:
    """ECS user fields for one user identifier (``as_text`` of the record's value)."""
    return _identity_of(text) if text else _NOBODY


@text_cache(_CACHE_SIZE)
def _identity_of(text: str) -> Identity:
    match = EMAIL.match(text)
    if match:
        return Identity({"id": text, "email": text, "domain": match.group(1).lower()}, text.lower())
    return Identity({"id": text, "name": text}, text)


def _target_user(text: Optional[str], action: str, object_type: str) -> Identity:
    """The affected user (``text`` is ``as_text`` of the record's object). A user stream also returns
    other objects' actions under unknown names (``dkim_record_source.update`` on a domain): for those
    only an email address is taken as a user."""
    if object_type != "user":
        return _NOBODY
    target = identity(text)
    return target if action.startswith("user.") or "email" in target.fields else _NOBODY


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
