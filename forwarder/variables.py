"""What a setting is (``Variable``): one FORWARDER_* variable with its kind, default, secrecy, where it
applies and who reads it. The configuration table (forwarder/config/table.py) lists the core's; a
plugin declares its own beside its options (a sink's ``Options``), so adding one touches no table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .kinds import Kind

# Where a variable applies: everywhere (CLI, container, Lambda, Splunk), in every Lambda function only,
# or in the fan-out functions (planner, worker) only.
EVERYWHERE, LAMBDA, FANOUT = "everywhere", "Lambda", "Lambda fan-out"

# Whether a tenant of FORWARDER_TENANTS sets it (its document field is ``Variable.tenant_field``):
# SHARED by every tenant, from the environment; PER_TENANT: the tenant's value, the environment's by
# default; TENANT_ONLY: one organization's own (credentials, whom to pull), never inherited and
# refused in the environment beside FORWARDER_TENANTS.
SHARED, PER_TENANT, TENANT_ONLY = "shared", "per tenant", "tenant only"


@dataclass(frozen=True)
class Variable:
    """One setting. ``help`` is the README's text (Markdown); ``field`` is the ``Settings`` attribute it
    fills (``sink.<name>`` for ``SinkSettings``), None when another module reads it (named in
    ``help``; ``sink_option``: declared by a sink with its ``Options``, read when it is chosen);
    ``splunk`` is the modular input's field (``input:<key>``, ``account:<key>``) feeding it."""

    name: str
    help: str
    kind: Kind
    default: Optional[str] = None
    secret: bool = False
    field: Optional[str] = None
    where: str = EVERYWHERE
    splunk: Optional[str] = None
    tenant: str = SHARED
    sink_option: bool = False

    @property
    def tenant_field(self) -> Optional[str]:
        """Its field in the tenants document (the name without ``FORWARDER_``, lower case), or None
        for a setting every tenant shares."""
        return None if self.tenant == SHARED else self.name[len("FORWARDER_") :].lower()

    @property
    def flag(self) -> Optional[str]:
        """The CLI flag overriding it: none for secrets (a command line is visible to every user of
        the machine) or for what only a Lambda function reads."""
        if self.secret or self.where != EVERYWHERE:
            return None
        return "--" + self.name[len("FORWARDER_") :].lower().replace("_", "-")
