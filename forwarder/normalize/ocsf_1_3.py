"""An OCSF 1.8.0 event of ``ocsf.py`` -> the same event in OCSF 1.3.0, the newest version Amazon
Security Lake's custom sources take (the Security Lake sink's rows). Pure.

The four classes emitted (3001, 3002, 3004, 3005) and every object they use exist in 1.3 as in 1.8;
what differs (docs/mapping.md, "OCSF 1.3 for Security Lake"):

* ``risk_score``, ``risk_level``, ``risk_level_id`` and ``risk_details`` are not attributes of the
  IAM classes in 1.3 (1.8's ``security_control`` profile brings them): left out. Nothing is lost: the
  score and its reasons are in ``unmapped.risk`` (``score``, ``reasons``) and the level in
  ``severity_id``/``severity`` (the level plus one).
* ``metadata.profiles`` loses ``security_control`` with them (the key goes when nothing is left).
* ``metadata.version`` is ``1.3.0``.
"""

from __future__ import annotations

from typing import Any, Dict

OCSF_VERSION = "1.3.0"
RISK_ATTRIBUTES = ("risk_score", "risk_level", "risk_level_id", "risk_details")
DROPPED_PROFILES = frozenset({"security_control"})


def downgrade(event: Dict[str, Any]) -> Dict[str, Any]:
    """The OCSF 1.3.0 form of an OCSF 1.8.0 ``event`` (a new dict; ``event`` is left as it is)."""
    doc = {key: value for key, value in event.items() if key not in RISK_ATTRIBUTES}
    metadata = dict(doc.get("metadata") or {})
    metadata["version"] = OCSF_VERSION
    profiles = [p for p in metadata.get("profiles") or [] if p not in DROPPED_PROFILES]
    if profiles:
        metadata["profiles"] = profiles
    else:
        metadata.pop("profiles", None)
    doc["metadata"] = metadata
    return doc
