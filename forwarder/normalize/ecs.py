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
  ``visibility_reasons`` (lost rua/ruf reports, kept apart; see ``dmarc.py``); a DMARC record under
  any other key adds the same, ``change`` naming the key.
* ``emailauth.audit.roles`` adds to ``added``/``removed`` the admin-level roles among them, whether
  the actor changed its own roles and whether the user was left with none (``roles.py``). Any change
  holding an SPF or DKIM record, whatever its key, adds ``emailauth.audit.spf`` / ``.dkim``
  (``txtrecords.py``), and every event carries ``emailauth.audit.risk.score`` (0-100, a long) and
  ``.reasons`` (``risk.py``), which CEF and OCSF severities use.
* ``ecs.version: 9.4.0`` (ECS marks it required). ``message`` is one line (control characters become
  spaces), at most 1024 characters.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from ..records import AuditRecord
from . import ECS_VERSION, Formatter, NormalizeOptions
from .changes import as_pair
from .facts import Facts
from .template import Own, Templated

PROFILE_FIELDS = ("full_name", "email")  # change keys that have a user.changes.* field in ECS
# ECS ``event``: the values every event holds; the record's (None here) set in each copy
_EVENT: Dict[str, Any] = {
    "kind": "event",
    "module": "emailauth",
    "dataset": "emailauth.audit",
    "provider": "audit",
    "category": None,
    "type": None,
    "outcome": "success",  # an audit record records an action that was carried out
    "id": None,
    "created": None,
}


def to_ecs(record: AuditRecord, opts: NormalizeOptions) -> Dict[str, Any]:
    return _FORMAT.document(record, opts)


def render(found: Facts, opts: NormalizeOptions, own: Own) -> Dict[str, Any]:
    """The ECS event from the record's facts and its own values."""
    time, event_id, created_at, ingest, original = own  # one unpacking: cheaper than each by name
    _, category, types = found.kind
    action = found.action
    event = _EVENT.copy()  # its fields in their order, cheaper than built one by one
    event["category"] = [category]
    event["type"] = [*types]
    event["id"] = event_id
    event["created"] = ingest
    if action:
        event["action"] = action
    if original is not None:
        event["original"] = original
    doc: Dict[str, Any] = {
        "@timestamp": time,
        "ecs": {"version": ECS_VERSION},
        "message": found.message,
        "event": event,
        "observer": {"vendor": opts.vendor, "product": opts.product},
    }
    user = user_fields(found)
    if user:
        doc["user"] = user
    domain = found.domain
    if domain:
        doc["entity"] = {
            "target": {"type": ["domain"], "name": domain.given, "id": domain.unicode or domain.given}
        }
    related: Dict[str, Any] = {}
    if found.related_users:
        related["user"] = [*found.related_users]
    if domain and domain.hosts:
        related["hosts"] = [*domain.hosts]
    if related:
        doc["related"] = related
    doc["emailauth"] = {"audit": audit_fields(created_at, found)}
    return doc


def audit_fields(created_at: str, found: Facts) -> Dict[str, Any]:
    """ECS ``emailauth.audit``: the record's time as given, the facts' audit fields, the risk."""
    # a copy with the value in created_at's place: cheaper than a new dict with the audit merged in
    audit = found.audit.copy()
    audit["created_at"] = created_at
    score, reasons = found.risk
    audit["risk"] = {"score": score, "reasons": [*reasons]}  # cached facts are shared: a copy
    return audit


def user_fields(found: Facts) -> Dict[str, Any]:
    """ECS ``user``: the actor, the affected user in its prior state (``target``), the new values
    (``changes``); empty when the record names nobody. ECS keeps the prior state in user.target and
    only the new values in user.changes."""
    user: Dict[str, Any] = found.actor.fields.copy()
    if found.target.fields and found.action != "user.login":
        user["target"], changed = target_fields(found)
        if changed:
            user["changes"] = changed
    return user


def target_fields(found: Facts) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """ECS ``user.target`` and ``user.changes`` of a record that names an affected user
    (``found.target``): that user in its prior state, and the new values (empty when none)."""
    target: Dict[str, Any] = found.target.fields.copy()
    changed: Dict[str, Any] = {}
    change_map = found.change_map
    for name in PROFILE_FIELDS:
        if name not in change_map:  # no as_pair call for it: most records change one of them at most
            continue
        pair = as_pair(change_map[name])
        if not pair:
            continue
        before, after = pair
        if isinstance(after, str):
            changed[name] = after
        if isinstance(before, str) and name not in target:
            target[name] = before
    roles = found.roles
    if roles:
        target["roles"], changed["roles"] = roles
    return target, changed


_FORMAT = Templated(render, time_in_ms=False)
format_ecs: Formatter = _FORMAT.event  # a login found by its text: filled in one call
