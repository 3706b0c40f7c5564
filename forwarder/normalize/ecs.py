"""Audit record -> ECS 9.4 event (MAPPING.md, section ECS). Pure: the ingest time comes in the options.

Choices beyond MAPPING.md, for whoever writes the index template or a detection rule:

* ``event.original`` is the record serialized canonically (``jsonutil.canonical``), so the SHA-256
  of its UTF-8 bytes is ``event.id``: anyone can check which record an event came from.
* The actor (``user``) fills ``user.id`` always, ``user.email`` and ``user.domain`` (lowercased) when
  it looks like an email address, ``user.name`` when it does not. The object of a user action fills
  ``user.target.*`` the same way (not for logins, where the actor is the user; for actions without
  a ``user.`` prefix only an email address counts as a user object). ``related.user``
  holds every user identifier of the event: emails lowercased, anything else as given.
* A domain object: ``entity.target.name`` as given, ``entity.target.id`` its Unicode form (UTS-46,
  lowercase, no trailing dot; the form domain streams are named by), ``entity.target.type:
  [domain]`` (ECS lists expected types "etc."; domain is not one of them). ``related.hosts`` holds
  the given, Unicode and ASCII (punycode) forms, lowercased.
* ``event.category`` by object type: user -> iam, anything else -> configuration, user.login ->
  authentication. ``event.type`` by the action's verb: create -> creation, destroy/delete ->
  deletion, update... -> change, anything else change when it has changes and info when not; iam
  events also carry ``user``.
* Everything under ``emailauth.audit`` is a keyword, a list of keywords or a boolean (see
  ``changes.py``), so the custom namespace maps as keyword everywhere. Raw top-level fields besides
  the six of the spec go to ``emailauth.audit.extra.<name>``; a ``changes`` that is not an object to
  ``emailauth.audit.changes_value``. Nothing a record holds is dropped. Index templates should map
  ``emailauth.*`` strings as keyword with date detection off (``changes.*_updated_at`` look like dates
  until a record holds something else).
* A ``dmarc_txt_record`` pair adds ``emailauth.audit.dmarc``: the tags of each side (``before.<tag>``,
  ``after.<tag>``), ``weakened`` with ``weakened_reasons`` and ``visibility_reduced`` with
  ``visibility_reasons`` (lost rua/ruf reports, kept apart; see ``dmarc.py``).
* ``ecs.version: 9.4.0`` (ECS marks it required). ``message`` is one line (control characters become
  spaces), at most 1024 characters.
"""

from __future__ import annotations

import functools
import re
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import idna

from .. import jsonutil
from ..events import Event
from ..records import AuditRecord
from ..timeutil import format_us, iso_text
from . import NormalizeOptions
from .changes import as_keyword, as_pair, as_text, flatten, role_diff, role_list, safe_names
from .dmarc import analyze

ECS_VERSION = "9.4.0"
_SPEC_FIELDS = frozenset({"action", "filterable_action", "user", "object", "changes", "created_at"})
_PROFILE_FIELDS = ("full_name", "email")  # change keys that have a user.changes.* field in ECS
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
# Per-value caches: an organization has few users, domains and actions, and a backlog repeats them.
_CACHE_SIZE = 4096


class _Identity(NamedTuple):
    """ECS user fields for one user identifier, and its form in ``related.user``. Cached, so shared:
    ``fields`` is copied before it is changed."""

    fields: Dict[str, str]
    related: str


_NOBODY = _Identity({}, "")


class _Kind(NamedTuple):
    """What the action decides: the object type and ``event.category``/``event.type``."""

    object_type: str
    category: str
    types: Tuple[str, ...]


def format_ecs(record: AuditRecord, opts: NormalizeOptions) -> Event:
    return Event(record.event_id, record.ts_us, jsonutil.dumps(to_ecs(record, opts)))


def to_ecs(
    record: AuditRecord, opts: NormalizeOptions, include_original: Optional[bool] = None
) -> Dict[str, Any]:
    """The ECS event; ``include_original`` overrides the option (CEF and OCSF build on this event)."""
    raw = record.raw
    action = as_text(raw.get("filterable_action")) or as_text(raw.get("action")) or ""
    changes = raw.get("changes")
    kind = _kind(action, record.object_type, bool(changes))
    object_type = kind.object_type
    change_map: Mapping[str, Any] = changes if isinstance(changes, dict) else _NO_CHANGES
    roles = _roles(change_map) if change_map else None
    audit = _audit(raw, object_type, change_map, roles)
    actor = _identity(raw.get("user"))
    target = _target_user(raw.get("object"), action, object_type)
    domain = _domain(raw.get("object")) if object_type == "domain" else None

    event: Dict[str, Any] = {
        "kind": "event",
        "module": "emailauth",
        "dataset": "emailauth.audit",
        "provider": "audit",
        "category": [kind.category],
        "type": list(kind.types),
        "outcome": "success",  # an audit record records an action that was carried out
        "id": record.event_id,
        "created": _ingest_text(opts.ingest_time_us),
    }
    if action:
        event["action"] = action
    if opts.include_original if include_original is None else include_original:
        event["original"] = jsonutil.canonical(raw).decode("utf-8")
    doc: Dict[str, Any] = {
        "@timestamp": iso_text(raw["created_at"], record.ts_us),
        "ecs": {"version": ECS_VERSION},
        "message": _message(raw, action, domain, audit),
        "event": event,
        "observer": {"vendor": opts.vendor, "product": opts.product},
    }
    if target.fields and action != "user.login":
        user: Dict[str, Any] = actor.fields.copy()
        user["target"] = target.fields.copy()
        _profile_changes(user, change_map, roles)
        doc["user"] = user
    elif actor.fields:
        doc["user"] = actor.fields.copy()
    if domain:
        doc["entity"] = {
            "target": {"type": ["domain"], "name": domain.given, "id": domain.unicode or domain.given}
        }
    related: Dict[str, Any] = {}
    related_users = _related_users(actor, target, change_map)
    if related_users:
        related["user"] = related_users
    if domain and domain.hosts:
        related["hosts"] = list(domain.hosts)
    if related:
        doc["related"] = related
    doc["emailauth"] = {"audit": audit}
    return doc


@functools.lru_cache(maxsize=8)  # one ingest time per run
def _ingest_text(us: int) -> str:
    return format_us(us)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _kind(action: str, stream_type: str, has_changes: bool) -> _Kind:
    """The object type (``user.*`` and ``domain.*`` say it, else the stream's), the category by
    object type and the type by the action's verb."""
    prefix = action.partition(".")[0]
    object_type = prefix if prefix in ("user", "domain") and "." in action else stream_type
    if action == "user.login":
        return _Kind(object_type, "authentication", ("start",))
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
        return _Kind(object_type, "iam", ("user", change))
    return _Kind(object_type, "configuration", (change,))


def _audit(
    raw: Mapping[str, Any],
    object_type: str,
    change_map: Mapping[str, Any],
    roles: Optional[Tuple[List[str], List[str]]],
) -> Dict[str, Any]:
    audit: Dict[str, Any] = {"created_at": raw["created_at"], "object_type": object_type}
    for name in ("object", "action", "filterable_action"):
        value = raw.get(name)
        if value is not None:
            audit[name] = value if isinstance(value, str) else as_keyword(value)
    if change_map:
        audit["changes"] = flatten(change_map)
    elif raw.get("changes") not in (None, {}):
        audit["changes_value"] = as_keyword(raw["changes"])
    if roles:
        added, removed = role_diff(*roles)
        audit["roles"] = {"added": added, "removed": removed}
    dmarc = _dmarc(change_map) if _DMARC_KEY in change_map else None
    if dmarc:
        audit["dmarc"] = dmarc
    if not _SPEC_FIELDS.issuperset(raw):
        extra = {key: value for key, value in raw.items() if key not in _SPEC_FIELDS}
        audit["extra"] = {name: as_keyword(extra[key]) for key, name in safe_names(extra).items()}
    return audit


def _roles(change_map: Mapping[str, Any]) -> Optional[Tuple[List[str], List[str]]]:
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
    for side, tags in (("before", result.before), ("after", result.after)):
        if tags:
            out[side] = {name: tags[key] for key, name in safe_names(tags).items()}
    out["weakened"] = result.weakened
    out["weakened_reasons"] = result.weakened_reasons
    out["visibility_reduced"] = result.visibility_reduced
    out["visibility_reasons"] = result.visibility_reasons
    return out


def _identity(value: Any) -> _Identity:
    """ECS user fields for one user identifier (non-strings are kept as their JSON text)."""
    text = as_text(value)
    return _identity_of(text) if text else _NOBODY


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _identity_of(text: str) -> _Identity:
    match = _EMAIL.match(text)
    if match:
        return _Identity({"id": text, "email": text, "domain": match.group(1).lower()}, text.lower())
    return _Identity({"id": text, "name": text}, text)


def _target_user(value: Any, action: str, object_type: str) -> _Identity:
    """The affected user. A user stream also returns other objects' actions under unknown names
    (``dkim_record_source.update`` on a domain): for those only an email address is taken as a user."""
    if object_type != "user":
        return _NOBODY
    target = _identity(value)
    return target if action.startswith("user.") or "email" in target.fields else _NOBODY


def _profile_changes(
    user: Dict[str, Any], change_map: Mapping[str, Any], roles: Optional[Tuple[List[str], List[str]]]
) -> None:
    """ECS keeps the prior state in user.target and only the new values in user.changes."""
    changed: Dict[str, Any] = {}
    for name in _PROFILE_FIELDS:
        pair = as_pair(change_map.get(name))
        if not pair:
            continue
        before, after = pair
        if isinstance(after, str):
            changed[name] = after
        if isinstance(before, str) and name not in user["target"]:
            user["target"][name] = before
    if roles:
        user["target"]["roles"], changed["roles"] = roles
    if changed:
        user["changes"] = changed


def _related_users(actor: _Identity, target: _Identity, change_map: Mapping[str, Any]) -> List[str]:
    found = {actor.related, target.related}
    found.discard("")
    for key, value in change_map.items():
        if str(key) == "email" or str(key).endswith("_email"):
            sides = as_pair(value) or [value]
            found.update(side.lower() for side in sides if isinstance(side, str) and _EMAIL.match(side))
    return sorted(found)


class _Domain(NamedTuple):
    given: str
    unicode: str
    ascii: Optional[str]  # None when some label has no ASCII form
    hosts: Tuple[str, ...]  # every form, lowercased and without the root dot: for related.hosts


@functools.lru_cache(maxsize=_CACHE_SIZE)  # IDNA is the costly part
def _label_forms(label: str) -> Tuple[str, str]:
    """(Unicode, ASCII) forms of one label."""
    try:
        uni = idna.decode(label, uts46=True)
    except ValueError:  # idna.IDNAError is a UnicodeError
        uni = label.lower()
    try:
        asc = idna.encode(uni, uts46=True).decode("ascii")
    except ValueError:
        asc = uni
    return uni, asc


def _domain(value: Any) -> Optional[_Domain]:
    given = as_text(value)
    return _domain_of(given) if given else None


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _domain_of(given: str) -> _Domain:
    """The forms of a domain name; labels IDNA cannot read stay as they are, lowercased (``_dmarc``,
    a broken ``xn--`` label)."""
    forms = [_label_forms(label) for label in given.rstrip(".").split(".")]
    ascii_form = ".".join(asc for _, asc in forms)
    unicode_form = ".".join(uni for uni, _ in forms)
    ascii_form_or_none = ascii_form if ascii_form.isascii() else None
    hosts = (given.lower().rstrip("."), unicode_form, ascii_form_or_none)
    return _Domain(given, unicode_form, ascii_form_or_none, tuple(sorted({host for host in hosts if host})))


def _message(raw: Mapping[str, Any], action: str, domain: Optional[_Domain], audit: Dict[str, Any]) -> str:
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


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _headline(actor: Optional[str], action: str, target: Optional[str], domain: Optional[_Domain]) -> str:
    """Who did what to what."""
    actor = actor or "unknown user"
    phrase = _PHRASES.get(action) or f"performed {action or 'an unknown action'}"
    target = target or ""
    if domain and domain.unicode != domain.given.lower().rstrip("."):
        target = f"{domain.given} ({domain.unicode})"
    if action == "user.login" or not target:
        return f"{actor} {phrase}"
    return f"{actor} {phrase} {target}" if action in _PHRASES else f"{actor} {phrase} on {target}"
