"""What Google SecOps checks of a UDM event before ``events:import`` takes it, as far as the forwarder's
events depend on it: only UDM's top-level fields, an RFC 3339 ``metadata.event_timestamp``, a known
``metadata.event_type`` and the nouns that type requires. Pure (no cryptography, no server), so the
format's tests use it on every runtime, Python 3.9 included."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

EVENT_TYPES = {
    "GENERIC_EVENT": (),
    "USER_LOGIN": ("target.user", "extensions.auth"),
    "USER_CREATION": ("principal.user", "target.user"),
    "USER_DELETION": ("principal.user", "target.user"),
    "USER_CHANGE_PERMISSIONS": ("principal.user", "target.user"),
    "USER_UNCATEGORIZED": ("principal.user",),
    "USER_RESOURCE_CREATION": ("principal.user", "target.resource"),
    "USER_RESOURCE_DELETION": ("principal.user", "target.resource"),
    "USER_RESOURCE_UPDATE_CONTENT": ("principal.user", "target.resource"),
    "USER_RESOURCE_ACCESS": ("principal.user", "target.resource"),
}
UDM_FIELDS = {
    "metadata", "principal", "target", "src", "observer", "intermediary", "about", "security_result",
    "network", "extensions", "additional",
}  # fmt: skip


def at_path(doc: Any, path: str) -> Any:
    for name in path.split("."):
        doc = doc.get(name) if isinstance(doc, dict) else None
    return doc


def udm_problem(udm: Any) -> Optional[str]:
    """Why the service would refuse this UDM event, or None."""
    if not isinstance(udm, dict):
        return "udm must be an object"
    unknown = sorted(set(udm) - UDM_FIELDS)
    if unknown:
        return f"Unknown name \"{unknown[0]}\" at 'udm': Cannot find field."
    stamp = at_path(udm, "metadata.event_timestamp")
    try:
        datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return f"invalid metadata.event_timestamp: {stamp!r}"
    kind = at_path(udm, "metadata.event_type")
    if kind not in EVENT_TYPES:
        return f"invalid metadata.event_type: {kind!r}"
    for noun in EVENT_TYPES[kind]:
        if not at_path(udm, noun):
            return f"{kind} requires {noun}"
    user = at_path(udm, "principal.user")
    if user is not None and not (user.get("userid") or user.get("email_addresses")):
        return "principal.user needs a userid or an email address"
    return None
