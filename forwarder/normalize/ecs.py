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
* ``emailauth.audit.roles`` adds to ``added``/``removed`` the admin-level roles among them, whether
  the actor changed its own roles and whether the user was left with none (``roles.py``). Any change
  holding an SPF or DKIM record, whatever its key, adds ``emailauth.audit.spf`` / ``.dkim``
  (``txtrecords.py``), and every event carries ``emailauth.audit.risk.score`` (0-100, a long) and
  ``.reasons`` (``risk.py``), which CEF and OCSF severities use.
* ``ecs.version: 9.4.0`` (ECS marks it required). ``message`` is one line (control characters become
  spaces), at most 1024 characters.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import idna

from .. import jsonutil
from ..events import Event
from ..records import AuditRecord
from ..timeutil import format_us
from . import NormalizeOptions, risk, txtrecords
from . import roles as role_analysis
from .changes import as_keyword, as_pair, as_text, flatten, role_list, safe_names
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
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def format_ecs(record: AuditRecord, opts: NormalizeOptions) -> Event:
    return Event(id=record.event_id, time_us=record.ts_us, body=jsonutil.dumps(to_ecs(record, opts)))


def to_ecs(record: AuditRecord, opts: NormalizeOptions) -> Dict[str, Any]:
    raw = record.raw
    action = as_text(raw.get("filterable_action")) or as_text(raw.get("action")) or ""
    object_type = _object_type(action, record.object_type)
    change_map: Mapping[str, Any] = raw["changes"] if isinstance(raw.get("changes"), dict) else {}
    roles = _roles(change_map)
    audit = _audit(raw, object_type, change_map, roles)
    audit["risk"] = risk.assess(action, audit)._asdict()
    actor = _identity(raw.get("user"))
    target = _target_user(raw.get("object"), action, object_type)
    domain = _domain(raw.get("object")) if object_type == "domain" else None

    doc: Dict[str, Any] = {
        "@timestamp": format_us(record.ts_us),
        "ecs": {"version": ECS_VERSION},
        "message": _message(raw, action, domain, audit),
        "event": _event(record, opts, action, object_type),
        "observer": {"vendor": opts.vendor, "product": opts.product},
    }
    user: Dict[str, Any] = dict(actor)
    if target and action != "user.login":
        user["target"] = dict(target)
        _profile_changes(user, change_map, roles)
    if user:
        doc["user"] = user
    if domain:
        doc["entity"] = {
            "target": {"type": ["domain"], "name": domain.given, "id": domain.unicode or domain.given}
        }
    related = {"user": _related_users(actor, target, change_map), "hosts": domain.hosts() if domain else []}
    if any(related.values()):
        doc["related"] = {key: value for key, value in related.items() if value}
    doc["emailauth"] = {"audit": audit}
    return doc


def _event(record: AuditRecord, opts: NormalizeOptions, action: str, object_type: str) -> Dict[str, Any]:
    category, types = _classify(action, object_type, bool(record.raw.get("changes")))
    event: Dict[str, Any] = {
        "kind": "event",
        "module": "emailauth",
        "dataset": "emailauth.audit",
        "provider": "audit",
        "category": category,
        "type": types,
        "outcome": "success",  # an audit record records an action that was carried out
        "id": record.event_id,
        "created": format_us(opts.ingest_time_us),
    }
    if action:
        event["action"] = action
    if opts.include_original:
        event["original"] = jsonutil.canonical(record.raw).decode("utf-8")
    return event


def _object_type(action: str, stream_type: str) -> str:
    prefix = action.partition(".")[0]
    return prefix if prefix in ("user", "domain") and "." in action else stream_type


def _classify(action: str, object_type: str, has_changes: bool) -> Tuple[List[str], List[str]]:
    if action == "user.login":
        return ["authentication"], ["start"]
    verb = action.rpartition(".")[2]
    if verb == "create":
        kind = "creation"
    elif verb in ("destroy", "delete"):
        kind = "deletion"
    elif verb.startswith("update") or has_changes:
        kind = "change"
    else:
        kind = "info"
    if object_type == "user":
        return ["iam"], ["user", kind]
    return ["configuration"], [kind]


def _audit(
    raw: Mapping[str, Any],
    object_type: str,
    change_map: Mapping[str, Any],
    roles: Optional[Tuple[List[str], List[str]]],
) -> Dict[str, Any]:
    audit: Dict[str, Any] = {"created_at": raw["created_at"], "object_type": object_type}
    for name in ("object", "action", "filterable_action"):
        if raw.get(name) is not None:
            audit[name] = as_keyword(raw[name])
    if change_map:
        audit["changes"] = flatten(change_map)
    elif raw.get("changes") not in (None, {}):
        audit["changes_value"] = as_keyword(raw["changes"])
    if roles:
        actor, target = as_text(raw.get("user")), as_text(raw.get("object"))
        audit["roles"] = role_analysis.analyze(*roles, actor, target).fields()
    dmarc = _dmarc(change_map)
    if dmarc:
        audit["dmarc"] = dmarc
    for name, fields in (
        ("spf", txtrecords.spf_fields(change_map)),
        ("dkim", txtrecords.dkim_fields(change_map)),
    ):
        if fields:
            audit[name] = fields
    extra = {key: value for key, value in raw.items() if key not in _SPEC_FIELDS}
    if extra:
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


def _identity(value: Any) -> Dict[str, str]:
    """ECS user fields for one user identifier (non-strings are kept as their JSON text)."""
    text = as_text(value)
    if not text:
        return {}
    match = _EMAIL.match(text)
    if match:
        return {"id": text, "email": text, "domain": match.group(1).lower()}
    return {"id": text, "name": text}


def _target_user(value: Any, action: str, object_type: str) -> Dict[str, str]:
    """The affected user. A user stream also returns other objects' actions under unknown names
    (``dkim_record_source.update`` on a domain): for those only an email address is taken as a user."""
    if object_type != "user":
        return {}
    target = _identity(value)
    return target if action.startswith("user.") or "email" in target else {}


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


def _related_users(actor: Dict[str, str], target: Dict[str, str], change_map: Mapping[str, Any]) -> List[str]:
    idents = [ident for ident in (actor, target) if ident]
    found = {ident["email"].lower() if "email" in ident else ident["id"] for ident in idents}
    for key, value in change_map.items():
        if str(key) == "email" or str(key).endswith("_email"):
            sides = as_pair(value) or [value]
            found.update(side.lower() for side in sides if isinstance(side, str) and _EMAIL.match(side))
    return sorted(found)


class _Domain(NamedTuple):
    given: str
    unicode: str
    ascii: Optional[str]  # None when some label has no ASCII form

    def hosts(self) -> List[str]:
        """Every form, lowercased and without the root dot: what related.hosts should match."""
        forms = (self.given.lower().rstrip("."), self.unicode, self.ascii)
        return sorted({form for form in forms if form})


@functools.lru_cache(maxsize=4096)  # an organization has few domains; IDNA is the costly part
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
    """The forms of a domain name; labels IDNA cannot read stay as they are, lowercased (``_dmarc``,
    a broken ``xn--`` label)."""
    given = as_text(value)
    if not given:
        return None
    forms = [_label_forms(label) for label in given.rstrip(".").split(".")]
    ascii_form = ".".join(asc for _, asc in forms)
    unicode_labels = [uni for uni, _ in forms]
    return _Domain(given, ".".join(unicode_labels), ascii_form if ascii_form.isascii() else None)


def _message(raw: Mapping[str, Any], action: str, domain: Optional[_Domain], audit: Dict[str, Any]) -> str:
    """One line: who did what to what, and the gist of the change."""
    actor = as_text(raw.get("user")) or "unknown user"
    phrase = _PHRASES.get(action) or f"performed {action or 'an unknown action'}"
    target = as_text(raw.get("object")) or ""
    if domain and domain.unicode != domain.given.lower().rstrip("."):
        target = f"{domain.given} ({domain.unicode})"
    if action == "user.login" or not target:
        text = f"{actor} {phrase}"
    else:
        text = f"{actor} {phrase} {target}" if action in _PHRASES else f"{actor} {phrase} on {target}"

    display = as_text(raw.get("action"))
    if "roles" in audit:
        roles = audit["roles"]
        diff = [f"+{r}" for r in roles["added"]] + [f"-{r}" for r in roles["removed"]]
        text += ": " + (" ".join(diff) or "no change")
    elif display and display != action:
        text += f": {display}"
    elif "changes" in audit:
        text += ": " + ", ".join(sorted(audit["changes"]))
    dmarc = audit.get("dmarc", {})
    if dmarc.get("weakened"):
        text += " (DMARC weakened: " + ", ".join(dmarc["weakened_reasons"]) + ")"
    if dmarc.get("visibility_reduced"):
        text += " (DMARC reports lost: " + ", ".join(dmarc["visibility_reasons"]) + ")"
    text = _CONTROL.sub(" ", text)
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"
