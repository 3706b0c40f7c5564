"""Audit record -> OCSF 1.8.0 event (MAPPING.md, section OCSF). Pure, built from the record's facts
(``facts.py``) and the ECS user fields, as the ECS event is, so every format tells the same story.

Classes (category 3, Identity & Access Management) by filterable_action:

* ``user.login``: Authentication 3002, activity 1 Logon; ``user`` is the actor, ``service.name``
  the product.
* ``user.update_roles``: User Access Management 3005; activity 1 Assign Privileges with the added
  roles as ``privileges``, else 2 Revoke Privileges with the removed ones, else 99 Other with none.
  A change that adds and removes is one event (one record, one ``metadata.uid``): Assign, and the
  removed roles stay in ``unmapped.roles.removed``.
* Any other action on a user object (``user.update`` and unknown ``user.*``): Account Change 3001,
  activity 1 Create / 6 Delete by the action's verb, else 99 Other; ``user`` is the affected user
  in its prior state, ``user_result`` the same user with the new ``full_name``/``email``.
* Anything else (``domain.*``, unknown objects): Entity Management 3004, activity 1 Create / 3
  Update / 4 Delete by verb, else 99 Other; ``entity`` holds the name (as given), ``uid`` (Unicode
  form for domains), ``type`` and in ``data`` the values before the change, ``entity_result`` the
  values after (left out for a deletion).

Common: ``time`` epoch ms, ``metadata`` (product name / vendor_name / version, ``version: 1.8.0``,
``uid`` = event id, ``event_code`` = filterable_action, ``original_time`` = created_at as given,
``processed_time`` = ingest time, ``log_name: emailauth.audit``, ``profiles: [security_control]``),
``severity_id`` from the risk level (``risk.py``: 1 Informational, 2 Low, 3 Medium, 4 High, 5
Critical), ``risk_score``, ``risk_level``/``risk_level_id`` and ``risk_details`` (the reason codes,
comma separated, when there are any), ``status_id: 1`` Success, ``message`` the ECS summary,
``actor.user`` the actor, ``unmapped`` everything ECS puts under ``emailauth.audit`` (changes,
roles, DMARC analysis, unknown fields), ``raw_data`` the canonical record (when include_original).
A user the record does not name is ``{"name": "unknown"}`` where OCSF requires one.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, Mapping, Optional, Tuple

from ..records import AuditRecord
from . import OCSF_VERSION, Formatter, NormalizeOptions
from .changes import as_text
from .ecs import PROFILE_FIELDS, audit_fields, target_fields
from .facts import Facts
from .memo import text_cache
from .ocsf_classes import ACCOUNT_CHANGE, AUTHENTICATION, ENTITY_MANAGEMENT, USER_ACCESS
from .risk import Risk
from .subject import identity
from .template import Own, Templated

CATEGORY = (3, "Identity & Access Management")
CLASS_NAMES = {
    ACCOUNT_CHANGE: "Account Change",
    AUTHENTICATION: "Authentication",
    ENTITY_MANAGEMENT: "Entity Management",
    USER_ACCESS: "User Access Management",
}
ACTIVITY_NAMES = {
    (AUTHENTICATION, 1): "Logon",
    (ACCOUNT_CHANGE, 1): "Create",
    (ACCOUNT_CHANGE, 6): "Delete",
    (USER_ACCESS, 1): "Assign Privileges",
    (USER_ACCESS, 2): "Revoke Privileges",
    (ENTITY_MANAGEMENT, 1): "Create",
    (ENTITY_MANAGEMENT, 3): "Update",
    (ENTITY_MANAGEMENT, 4): "Delete",
}
OTHER = 99
# activity_id by the action's verb
_ACCOUNT_ACTIVITIES = {"create": 1, "destroy": 6, "delete": 6}
_ENTITY_ACTIVITIES = {"create": 1, "destroy": 4, "delete": 4}
# risk level -> (risk_level_id, risk_level); severity_id is one more (0 is Unknown there).
RISK_LEVEL = {
    "info": (0, "Info"),
    "low": (1, "Low"),
    "medium": (2, "Medium"),
    "high": (3, "High"),
    "critical": (4, "Critical"),
}
SEVERITY_NAMES = {"info": "Informational"}
UNKNOWN_USER = {"name": "unknown"}  # copied into each event: events share no container


def to_ocsf(record: AuditRecord, opts: NormalizeOptions) -> Dict[str, Any]:
    return _FORMAT.document(record, opts)


def render(found: Facts, opts: NormalizeOptions, own: Own) -> Dict[str, Any]:
    """The OCSF event from the record's facts and its own values."""
    time, event_id, created_at, ingest, original = own  # one unpacking: cheaper than each by name
    audit = audit_fields(created_at, found)  # ECS emailauth.audit
    action = found.action
    score, reasons = found.risk
    roles = audit.get("roles")  # a role change's analysis
    added, removed = (bool(roles["added"]), bool(roles["removed"])) if roles else (False, False)
    head = _head if found.cacheable else _head.__wrapped__
    doc = head(action, found.kind.object_type, added, removed, score).copy()  # the cached one stays as it is
    class_uid, activity_id = doc["class_uid"], doc["activity_id"]  # one lookup instead of classify's work
    doc["time"] = time
    doc["message"] = found.message
    known, shape = _metadata_shape
    if known is not opts:
        shape = _new_metadata_shape(opts)
    metadata = shape.copy()  # the shape's fields in their order; its containers copied below
    metadata["uid"] = event_id
    metadata["product"] = shape["product"].copy()
    metadata["profiles"] = ["security_control"]
    metadata["original_time"] = created_at
    metadata["processed_time"] = ingest
    if action:
        metadata["event_code"] = action
    doc["metadata"] = metadata
    if reasons:
        doc["risk_details"] = ", ".join(reasons)
    actor_id = found.actor.fields.get("id")
    if actor_id:
        doc["actor"] = {"user": _user_of(actor_id).copy()}  # the cached one stays as it is
    _add_class_fields(doc, class_uid, activity_id, found, audit, opts)
    doc["unmapped"] = audit
    if original is not None:
        doc["raw_data"] = original
    return doc


def _new_metadata_shape(opts: NormalizeOptions) -> Dict[str, Any]:
    """The metadata of the events made with ``opts``, the record's values left None: kept with
    ``opts`` (one options value a pass), copied into each event rather than built field by field."""
    global _metadata_shape
    shape = {
        "version": OCSF_VERSION,
        "uid": None,
        "product": {"name": opts.product, "vendor_name": opts.vendor, "version": opts.product_version},
        "log_name": "emailauth.audit",
        "profiles": None,
        "original_time": None,
        "processed_time": None,
    }
    _metadata_shape = (opts, shape)  # one assignment: threads see the old pair or the new one
    return shape


_metadata_shape: Tuple[Optional[NormalizeOptions], Dict[str, Any]] = (None, {})


@functools.lru_cache(maxsize=1024)  # few actions, object types and scores; called with short strings only
def _head(action: str, object_type: str, added: bool, removed: bool, score: int) -> Dict[str, Any]:
    """The event's first fields, which its class, activity (``classify``) and risk score decide, in
    their order; ``time``, ``message`` and ``metadata`` hold their places. Only texts and numbers: a
    copy shares nothing that can change."""
    class_uid, activity_id = classify(action, object_type, added, removed)
    level = Risk(score, []).level  # the score decides it: read here, once per cached head
    class_name, activity_name = CLASS_NAMES[class_uid], ACTIVITY_NAMES.get((class_uid, activity_id), "Other")
    risk_level_id, risk_level = RISK_LEVEL[level]
    return {
        "class_uid": class_uid,
        "class_name": class_name,
        "category_uid": CATEGORY[0],
        "category_name": CATEGORY[1],
        "activity_id": activity_id,
        "activity_name": activity_name,
        "type_uid": class_uid * 100 + activity_id,
        "type_name": f"{class_name}: {activity_name}",
        "time": None,
        "severity_id": risk_level_id + 1,  # 0 is Unknown there
        "severity": SEVERITY_NAMES.get(level, risk_level),
        "status_id": 1,
        "status": "Success",
        "risk_score": score,
        "risk_level_id": risk_level_id,
        "risk_level": risk_level,
        "message": None,
        "metadata": None,
    }


def classify(action: str, object_type: str, added: bool, removed: bool) -> Tuple[int, int]:
    """(class_uid, activity_id) for a filterable_action, the object type and whether a role change
    added roles, removed some."""
    if action == "user.login":
        return AUTHENTICATION, 1
    if action == "user.update_roles":
        return USER_ACCESS, 1 if added else 2 if removed else OTHER
    verb = action.rpartition(".")[2]
    if object_type == "user":
        return ACCOUNT_CHANGE, _ACCOUNT_ACTIVITIES.get(verb, OTHER)
    if verb.startswith("update"):
        return ENTITY_MANAGEMENT, 3
    return ENTITY_MANAGEMENT, _ENTITY_ACTIVITIES.get(verb, OTHER)


def _add_class_fields(
    doc: Dict[str, Any],
    class_uid: int,
    activity_id: int,
    found: Facts,
    audit: Mapping[str, Any],
    opts: NormalizeOptions,
) -> None:
    """Adds the fields of the event's class to ``doc``; ``audit`` is the ECS emailauth.audit."""
    if class_uid == AUTHENTICATION:
        actor_id = found.actor.fields.get("id")
        doc["user"] = _user_of(actor_id).copy() if actor_id else dict(UNKNOWN_USER)
        doc["service"] = {"name": opts.product}
    elif class_uid == USER_ACCESS:
        roles = audit.get("roles", {})
        doc["user"] = _prior_user(found) if found.target.fields else dict(UNKNOWN_USER)
        doc["privileges"] = (
            roles.get("added") if activity_id == 1 else roles.get("removed") if activity_id == 2 else []
        )
    elif class_uid == ACCOUNT_CHANGE:
        if not found.target.fields:
            doc["user"] = dict(UNKNOWN_USER)
            return
        if found.change_map.keys().isdisjoint(PROFILE_FIELDS):  # most: neither full_name nor email changes
            doc["user"] = user = _unchanged_user(found)
            doc["user_result"] = user.copy()
            return
        target, changed = target_fields(found)  # ECS user.target (the prior state) and user.changes
        doc["user"] = _user(target)
        # the new full_name and email over the prior state (_user reads no other of user.changes)
        doc["user_result"] = _user({**target, **changed})
    else:
        # the entity and the sides of its change pairs spelled out here: half the change records
        domain = found.domain
        if domain:  # as ECS entity.target
            entity: Dict[str, Any] = {
                "name": domain.given,
                "uid": domain.unicode or domain.given,
                "type": "domain",
            }
        else:
            name = as_text(audit.get("object"))  # a list keeps its JSON text
            entity = {"name": name or "unknown", "type": audit["object_type"]}
        before: Dict[str, Any] = {}
        after: Dict[str, Any] = {}
        for key, entry in (audit.get("changes") or {}).items():
            if "before" in entry:  # a pair (``changes.flatten``): both sides, else a lone value
                before[key] = entry["before"]
                after[key] = entry["after"]
        doc["entity"] = entity
        if activity_id != 4:
            doc["entity_result"] = result = entity.copy()
            if after:
                result["data"] = after
        if before:  # with after: both sides of each pair
            entity["data"] = before


def _prior_user(found: Facts) -> Dict[str, Any]:
    """The OCSF user of the affected user in its prior state (the ECS user.target), a record naming one."""
    if found.change_map.keys().isdisjoint(PROFILE_FIELDS):  # its own fields (and roles, not read here)
        return _unchanged_user(found)
    return _user(target_fields(found)[0])


def _unchanged_user(found: Facts) -> Dict[str, Any]:
    """The OCSF user of the affected user of a record whose changes hold neither full_name nor email:
    the cached one of its id, copied (the cached one stays as it is)."""
    return _user_of(found.target.fields["id"]).copy()


@text_cache(4096)  # a trail repeats its users
def _user_of(user_id: str) -> Dict[str, Any]:
    """The OCSF user of a record's user or object with this id (its ECS fields follow from it:
    ``subject.identity``). Shared: copy it (only texts: a copy shares nothing that can change)."""
    return _user(identity(user_id).fields)


def _user(ident: Mapping[str, Any]) -> Dict[str, Any]:
    """An OCSF user from an ECS user (``id``, ``email``, ``name``, ``full_name``)."""
    user: Dict[str, Any] = {"uid": ident["id"], "name": ident.get("name") or ident["id"]}
    if ident.get("email"):
        user["email_addr"] = ident["email"]
    if ident.get("full_name"):
        user["full_name"] = ident["full_name"]
    return user


_FORMAT = Templated(render, time_in_ms=True)
format_ocsf: Formatter = _FORMAT.event  # a login found by its text: filled in one call
