"""Audit record -> Google SecOps UDM event (the ``udm`` format; the Google SecOps sink sends these to
``events:import``). Pure, built from the record's facts (``facts.py``) as ECS and OCSF are.

Field names are UDM's own (snake_case, as the UDM field list, UDM search and YARA-L spell them; the
API's JSON parser takes them as it takes camelCase).

* ``metadata``: ``event_timestamp`` the record's time (RFC 3339), ``collected_timestamp`` the ingest
  time, ``product_log_id`` the event id (the service does not de-duplicate: a copy is told by it),
  ``product_event_type`` the action (filterable_action, else action), ``vendor_name`` /
  ``product_name`` / ``product_version`` from the options, ``description`` the ECS message.
* ``event_type`` by the action (UDM requires per type the fields listed with it):
  ``user.login``: USER_LOGIN (the user as ``principal.user`` and ``target.user``,
  ``extensions.auth``); a user object: USER_CREATION / USER_DELETION by the verb, a role change
  USER_CHANGE_PERMISSIONS, else USER_UNCATEGORIZED (``target.user`` the affected user); a domain:
  USER_RESOURCE_CREATION / _DELETION / _UPDATE_CONTENT / _ACCESS by the verb (``target.resource``:
  ``name`` the Unicode form, ``product_object_id`` the name as given, ``resource_subtype: domain``).
  A record naming no actor is a GENERIC_EVENT (every USER_ type needs ``principal.user``).
* Users: ``userid`` always, ``email_addresses`` for an email address, ``user_display_name`` otherwise;
  the affected user's roles after a role change in ``target.user.attribute.roles``.
* ``security_result``: ``action: [ALLOW]`` (an audit record records what was done), ``severity`` and
  ``risk_score`` from the risk (``risk.py``), ``summary`` the risk reasons.
* ``additional.fields``: everything ECS puts under ``emailauth.audit``, flattened to dotted keys
  (``emailauth.audit.dmarc.weakened``), so YARA-L reads each as ``additional.fields["<key>"]``,
  booleans as the text ``true``/``false``; the canonical record as ``event.original`` with
  include_original. Nothing a record holds is dropped.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from . import Formatter, NormalizeOptions
from .ecs import audit_fields
from .facts import Facts
from .template import Own, Templated

AUDIT_PREFIX = "emailauth.audit"
_SEVERITY = {
    "info": "INFORMATIONAL",
    "low": "LOW",
    "medium": "MEDIUM",
    "high": "HIGH",
    "critical": "CRITICAL",
}
_USER_TYPES = {"creation": "USER_CREATION", "deletion": "USER_DELETION"}
_RESOURCE_TYPES = {
    "creation": "USER_RESOURCE_CREATION",
    "deletion": "USER_RESOURCE_DELETION",
    "change": "USER_RESOURCE_UPDATE_CONTENT",
    "info": "USER_RESOURCE_ACCESS",
}


def event_type(found: Facts) -> str:
    """The UDM ``metadata.event_type`` of a record's facts (see the module's docstring)."""
    if not found.actor.fields:
        return "GENERIC_EVENT"
    _, category, types = found.kind
    if category == "authentication":
        return "USER_LOGIN"
    if category == "iam":
        if not found.target.fields:
            return "USER_UNCATEGORIZED"
        if found.roles:
            return "USER_CHANGE_PERMISSIONS"
        return _USER_TYPES.get(types[-1], "USER_UNCATEGORIZED")
    if found.domain is None:
        return "USER_UNCATEGORIZED"
    return _RESOURCE_TYPES[types[-1]]


def udm_user(fields: Mapping[str, Any]) -> Dict[str, Any]:
    """A UDM ``User`` from the ECS user fields of one identity."""
    user: Dict[str, Any] = {"userid": fields["id"]}
    if "email" in fields:
        user["email_addresses"] = [fields["email"]]
    elif "name" in fields:
        user["user_display_name"] = fields["name"]
    return user


def flat(prefix: str, value: Any, into: Dict[str, Any]) -> Dict[str, Any]:
    """``value``'s leaves under dotted keys starting with ``prefix`` (lists are leaves); a boolean
    becomes the text ``true``/``false``, which UDM search and YARA-L compare as they compare any text."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            flat(f"{prefix}.{key}", item, into)
    elif isinstance(value, bool):
        into[prefix] = "true" if value else "false"
    else:
        into[prefix] = value
    return into


def render(found: Facts, opts: NormalizeOptions, own: Own) -> Dict[str, Any]:
    time, event_id, created_at, ingest, original = own
    kind = event_type(found)
    metadata: Dict[str, Any] = {
        "event_timestamp": time,
        "collected_timestamp": ingest,
        "event_type": kind,
        "vendor_name": opts.vendor,
        "product_name": opts.product,
        "product_version": opts.product_version,
        "product_log_id": event_id,
        "description": found.message,
    }
    if found.action:
        metadata["product_event_type"] = found.action
    doc: Dict[str, Any] = {"metadata": metadata}
    if found.actor.fields:
        doc["principal"] = {"user": udm_user(found.actor.fields)}
    target: Dict[str, Any] = {}
    if kind == "USER_LOGIN":
        target["user"] = udm_user(found.actor.fields)
        target["application"] = opts.product
        doc["extensions"] = {"auth": {"type": "AUTHTYPE_UNSPECIFIED"}}
    elif found.target.fields:
        target["user"] = udm_user(found.target.fields)
        if found.roles:
            target["user"]["attribute"] = {"roles": [{"name": role} for role in found.roles[1]]}
    domain = found.domain
    if domain:
        target["resource"] = {
            "name": domain.unicode or domain.given,
            "product_object_id": domain.given,
            "resource_subtype": "domain",
        }
    if target:
        doc["target"] = target
    score, reasons = found.risk
    result: Dict[str, Any] = {
        "action": ["ALLOW"],
        "severity": _SEVERITY[found.risk.level],
        "risk_score": score,
    }
    if reasons:
        result["summary"] = ", ".join(reasons)
    doc["security_result"] = [result]
    fields = flat(AUDIT_PREFIX, audit_fields(created_at, found), {})
    if original is not None:
        fields["event.original"] = original
    doc["additional"] = {"fields": fields}
    return doc


_FORMAT = Templated(render, time_in_ms=False)
format_udm: Formatter = _FORMAT.event
