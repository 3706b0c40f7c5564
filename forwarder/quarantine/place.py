"""What every quarantine opener takes (``open_at``): each quarantine reads the part it needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class QuarantinePlace:
    location: str  # FORWARDER_QUARANTINE
    kms_key_id: Optional[str] = None  # FORWARDER_S3_KMS_KEY_ID: SSE-KMS with this key, else SSE-S3
    timeout_seconds: float = 60.0  # FORWARDER_HTTP_TIMEOUT: bounds each call to a remote one
