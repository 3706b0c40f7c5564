"""What the simulated organization is made of: its users and domains, the product's roles, and the
DNS record texts a domain's audit changes quote."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

Record = Dict[str, Any]

ORG_DOMAIN = "acme-widgets.example"
IDN_DOMAIN = "bücher.example"  # ASCII (punycode) form: xn--bcher-kva.example
DESTROYED_DOMAIN = "legacy-acme.example"
DAY_US = 86_400 * 1_000_000

ROLES = (
    "DataAccessRole",
    "OrganizationAdminRole",
    "PolicyAdminRole",
    "UserAdminRole",
    "ThreatFeedSubmissionRole",
    "ReportRecipientRole",
    "ThreatAdminRole",
    "AuditingRole",
)
ADMIN_ROLES = ("OrganizationAdminRole", "PolicyAdminRole", "UserAdminRole", "ThreatAdminRole")
PLAIN_ROLES = tuple(r for r in ROLES if r not in ADMIN_ROLES)
UNKNOWN_ACTIONS = ("dkim_record_source.update", "bimi_record_source.create")
_DMARC_ORDER = ("v", "p", "sp", "pct", "rua", "ruf", "adkim", "aspf", "fo")

# The cast: names to draw from, and the indexes of users whose roles never change.
FIRST_NAMES = (
    "Alice", "Bruno", "Chloé", "Daniel", "Emma", "Farid", "Grace", "Hiro", "Ingrid", "José", "Kate",
    "Liam", "Maria", "Noah", "Olga", "Priya", "Quentin", "Rosa", "Sven", "Tara", "Umar", "Vera",
    "Wei", "Yusuf", "Zoë", "Aoife", "Björn", "Carmen", "Dmitri", "Elif",
)  # fmt: skip
LAST_NAMES = (
    "Anderson", "Bauer", "Chen", "Dubois", "Eriksen", "Fischer", "García", "Hoffmann", "Ito",
    "Jansen", "Kowalski", "Lindqvist", "Müller", "Nakamura", "O'Neill", "Petrov", "Quinn", "Rossi",
    "Silva", "Tanaka", "Usman", "Varga", "Walsh", "Xu", "Yilmaz", "Zimmermann", "Novak", "Moreau",
)  # fmt: skip
TIME_ZONES = ("America/New_York", "America/Los_Angeles", "Europe/London", "Europe/Berlin", "Asia/Tokyo")
OWNER, USER_ADMIN, DOMAIN_ADMINS = 0, 1, (0, 2, 3)


@dataclass
class SimUser:
    email: str
    full_name: str
    roles: List[str]
    phone: Optional[str] = None
    time_zone: str = "America/New_York"

    def as_api(self) -> Record:
        """The element of the users endpoint."""
        return {"email": self.email, "full_name": self.full_name, "roles": list(self.roles)}


@dataclass
class SimDomain:
    name: str
    created_us: int
    destroyed_us: Optional[int] = None
    dmarc: Dict[str, str] = field(default_factory=dict)
    dmarc_updated_us: int = 0
    spf_includes: List[str] = field(default_factory=lambda: ["_spf.google.com"])
    spf_all: str = "~all"
    dkim_selector: str = "s1"
    dkim_key: str = ""
    dkim_source: str = "customer_dns"

    @property
    def destroyed(self) -> bool:
        return self.destroyed_us is not None

    def live_at(self, ts: int) -> bool:
        return self.created_us < ts and (self.destroyed_us is None or ts < self.destroyed_us)

    def spf_text(self) -> str:
        return " ".join(["v=spf1", *(f"include:{i}" for i in self.spf_includes), self.spf_all])

    def dkim_text(self) -> str:
        return f"v=DKIM1; k=rsa; p={self.dkim_key}"


def dmarc_text(tags: Dict[str, str]) -> str:
    return "; ".join(f"{k}={tags[k]}" for k in _DMARC_ORDER if k in tags)
