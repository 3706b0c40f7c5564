"""What an audit record says, derived once and rendered by every format (ECS, CEF, OCSF).

The choices (who is the actor and who the target, which forms a domain has, what ``emailauth.audit``
holds, the one-line message) are documented with the ECS mapping in ``ecs.py``.

Speed: most of a trail is logins, records without changes that differ only in ``created_at``. Their
facts depend on a handful of strings, so they are cached by those (bounded), their risk included; an
analytic that needs ``changes`` (roles, DMARC, SPF, DKIM) never sees a cached record.
"""

from __future__ import annotations

import functools
import re
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from ..domains import label_forms
from ..records import AuditRecord
from . import roles as role_analysis
from . import txtrecords
from .changes import as_keyword, as_pair, as_text, flatten, role_list, safe_names
from .dmarc import analyze, parse_tags
from .memo import MAX_TEXT, text_cache
from .risk import Risk, assess

_SPEC_FIELDS = frozenset({"action", "filterable_action", "user", "object", "changes", "created_at"})
_DMARC_KEY = "dmarc_txt_record"
_EMAIL = re.compile(r"^[^@\s]+@((?:[\w-]+\.)+[\w-]+)\.?$")
_PHRASES = {
    "user.login": "logged in",
    "user.update": "updated user",
    "user.update_roles": "changed roles of",
    "domain.create": "created domain",
    "domain.update": "updated domain",
    "domain.destroy": "deleted domain",
}
_MESSAGE_MAX = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # all of them fail str.isprintable
_NO_CHANGES: Mapping[str, Any] = MappingProxyType({})
_NO_NAMES: Mapping[Any, str] = MappingProxyType({})
_CACHE_SIZE = 4096  # an organization has few users, domains and actions; a backlog repeats them
Roles = Tuple[List[str], List[str]]
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
    return plain_facts(key) if key else _derive(record.raw, record.object_type)


def plain_key(record: AuditRecord) -> Optional[PlainKey]:
    """For a record without changes or unknown fields (a login), the strings its facts depend on
    (user, object, action, filterable_action, stream type), when short enough to key a cache."""
    raw = record.raw
    changes = raw.get("changes")
    if (changes is None or changes == {}) and _SPEC_FIELDS.issuperset(raw):
        user, obj, action, filterable = (
            raw.get("user"),
            raw.get("object"),
            raw.get("action"),
            raw.get("filterable_action"),
        )
        # Strings or nulls only: a cache key must not confuse 1 with true or 1.0.
        if (
            type(user) in _PLAIN
            and type(obj) in _PLAIN
            and type(action) in _PLAIN
            and type(filterable) in _PLAIN
            and len(user or "") + len(obj or "") + len(action or "") + len(filterable or "") <= MAX_TEXT
        ):
            return (user, obj, action, filterable, record.object_type)
    return None


def plain_facts(key: PlainKey) -> Facts:
    """The facts of the records with this ``plain_key`` (cached: shared)."""
    return _plain_facts(*key)


def _short(*texts: Optional[str]) -> bool:
    """Short enough together to key a cache (``memo.MAX_TEXT``)."""
    return sum(len(text) for text in texts if text) <= MAX_TEXT


@functools.lru_cache(maxsize=_CACHE_SIZE)  # called with short strings only
def _plain_facts(
    user: Optional[str], obj: Optional[str], action: Optional[str], filterable: Optional[str], stream: str
) -> Facts:
    """The facts of a record without changes or unknown fields (a login): they depend on these alone."""
    raw = {"user": user, "object": obj, "action": action, "filterable_action": filterable}
    return _derive(raw, stream)


def _derive(raw: Mapping[str, Any], stream_type: str) -> Facts:
    action = as_text(raw.get("filterable_action")) or as_text(raw.get("action")) or ""
    changes = raw.get("changes")
    kind = _kind(action, stream_type, bool(changes))
    change_map: Mapping[str, Any] = changes if isinstance(changes, dict) else _NO_CHANGES
    roles = _roles(change_map) if change_map else None
    names = safe_names(change_map) if change_map else _NO_NAMES
    audit = _audit(raw, kind.object_type, change_map, names, roles)
    actor = _identity(raw.get("user"))
    target = _target_user(raw.get("object"), action, kind.object_type)
    domain = _domain(raw.get("object")) if kind.object_type == "domain" else None
    return Facts(
        action,
        as_text(raw.get("action")),
        kind,
        change_map,
        names,
        roles,
        audit,
        assess(action, audit),
        actor,
        target,
        domain,
        _related_users(actor, target, change_map),
        _message(raw, action, domain, audit),
        _short(action, as_text(raw.get("action")), as_text(raw.get("user")), as_text(raw.get("object"))),
    )


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


def _audit(
    raw: Mapping[str, Any],
    object_type: str,
    change_map: Mapping[str, Any],
    names: Mapping[Any, str],
    roles: Optional[Roles],
) -> Dict[str, Any]:
    audit: Dict[str, Any] = {"object_type": object_type}
    for name in ("object", "action", "filterable_action"):
        value = raw.get(name)
        if value is not None:
            audit[name] = value if isinstance(value, str) else as_keyword(value)
    if change_map:
        audit["changes"] = flatten(change_map, names)
    elif raw.get("changes") not in (None, {}):
        audit["changes_value"] = as_keyword(raw["changes"])
    if roles:
        actor, target = as_text(raw.get("user")), as_text(raw.get("object"))
        audit["roles"] = role_analysis.analyze(*roles, actor, target).fields()
    dmarc = _dmarc(change_map) if _DMARC_KEY in change_map else None
    if dmarc:
        audit["dmarc"] = dmarc
    if change_map:
        audit.update(txtrecords.fields(change_map, names))
    if not _SPEC_FIELDS.issuperset(raw):
        extra = {key: value for key, value in raw.items() if key not in _SPEC_FIELDS}
        audit["extra"] = {name: as_keyword(extra[key]) for key, name in safe_names(extra).items()}
    return audit


def _roles(change_map: Mapping[str, Any]) -> Optional[Roles]:
    """(before, after) role names when ``changes.roles`` is a pair of role lists."""
    pair = as_pair(change_map.get("roles"))
    if not pair:
        return None
    before, after = role_list(pair[0]), role_list(pair[1])
    return (before, after) if before is not None and after is not None else None


def _dmarc(change_map: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    pair = as_pair(change_map.get(_DMARC_KEY))
    if not pair or not all(side is None or isinstance(side, str) for side in pair):
        return None
    result = analyze(pair[0], pair[1])
    out: Dict[str, Any] = {}
    for side, text, tags in (("before", pair[0], result.before), ("after", pair[1], result.after)):
        if text and tags:
            out[side] = _field_tags(text).copy()
    out["weakened"] = result.weakened
    out["weakened_reasons"] = result.weakened_reasons
    out["visibility_reduced"] = result.visibility_reduced
    out["visibility_reasons"] = result.visibility_reasons
    return out


# A trail holds each DMARC record twice: the after of one change, the before of the next.
@text_cache(1024)
def _field_tags(text: str) -> Dict[str, str]:
    """A DMARC record's tags under field-safe names (shared: copy it)."""
    tags = parse_tags(text)
    return {name: tags[key] for key, name in safe_names(tags).items()}


def _identity(value: Any) -> Identity:
    """ECS user fields for one user identifier (non-strings are kept as their JSON text)."""
    text = as_text(value)
    return _identity_of(text) if text else _NOBODY


@text_cache(_CACHE_SIZE)
def _identity_of(text: str) -> Identity:
    match = _EMAIL.match(text)
    if match:
        return Identity({"id": text, "email": text, "domain": match.group(1).lower()}, text.lower())
    return Identity({"id": text, "name": text}, text)


def _target_user(value: Any, action: str, object_type: str) -> Identity:
    """The affected user. A user stream also returns other objects' actions under unknown names
    (``dkim_record_source.update`` on a domain): for those only an email address is taken as a user."""
    if object_type != "user":
        return _NOBODY
    target = _identity(value)
    return target if action.startswith("user.") or "email" in target.fields else _NOBODY


def _related_users(actor: Identity, target: Identity, change_map: Mapping[str, Any]) -> Tuple[str, ...]:
    found = {actor.related, target.related}
    found.discard("")
    for key, value in change_map.items():
        if str(key) == "email" or str(key).endswith("_email"):
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


def _message(raw: Mapping[str, Any], action: str, domain: Optional[Domain], audit: Dict[str, Any]) -> str:
    """One line: who did what to what, and the gist of the change."""
    text = _headline(as_text(raw.get("user")), action, as_text(raw.get("object")), domain)
    display = as_text(raw.get("action"))
    if "roles" in audit:
        roles = audit["roles"]
        diff = [f"+{r}" for r in roles["added"]] + [f"-{r}" for r in roles["removed"]]
        text += ": " + (" ".join(diff) or "no change")
    elif display and display != action:
        text += f": {display}"
    elif "changes" in audit:
        text += ": " + ", ".join(sorted(audit["changes"]))
    dmarc = audit.get("dmarc")
    if dmarc and dmarc["weakened"]:
        text += " (DMARC weakened: " + ", ".join(dmarc["weakened_reasons"]) + ")"
    if dmarc and dmarc["visibility_reduced"]:
        text += " (DMARC reports lost: " + ", ".join(dmarc["visibility_reasons"]) + ")"
    if not text.isprintable():
        text = _CONTROL.sub(" ", text)
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


def _headline(actor: Optional[str], action: str, target: Optional[str], domain: Optional[Domain]) -> str:
    """Who did what to what."""
    actor = actor or "unknown user"
    phrase = _PHRASES.get(action) or f"performed {action or 'an unknown action'}"
    target = target or ""
    if domain and domain.unicode != domain.given.lower().rstrip("."):
        target = f"{domain.given} ({domain.unicode})"
    if action == "user.login" or not target:
        return f"{actor} {phrase}"
    return f"{actor} {phrase} {target}" if action in _PHRASES else f"{actor} {phrase} on {target}"
