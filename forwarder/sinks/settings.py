"""What a sink is configured with. Built by forwarder.config from FORWARDER_SINK_* variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional


@dataclass(frozen=True)
class SinkSettings:
    uri: str  # FORWARDER_SINK, never holding a secret
    token: Optional[str] = field(default=None, repr=False)  # FORWARDER_SINK_TOKEN
    batch_events: Optional[int] = None  # None: the sink's own default
    batch_bytes: Optional[int] = None
    accept_body: Optional[str] = (
        None  # HTTP collector: a regex its 2xx reply must match (proof of acceptance)
    )
    ca_bundle: Optional[str] = None  # a PEM file for private CAs (FORWARDER_SINK_CA_BUNDLE)
    verify_tls: bool = True
    timeout_seconds: float = 60.0
    max_attempts: int = 5  # FORWARDER_MAX_ATTEMPTS: tries per request, the first included
    gzip: bool = True
    # Splunk HEC metadata
    index: Optional[str] = None
    sourcetype: str = "emailauth:audit"
    source: str = "emailauth-audit-forwarder"
    host: Optional[str] = None
    hec_ack: bool = False  # wait for indexer acknowledgement before a batch counts as delivered
    http_body: str = "ndjson"  # HTTP collector: "ndjson" or "json-array" (FORWARDER_HTTP_BODY)
    # extra request headers for generic HTTP collectors (never logged)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    # how the token is presented: "" (the sink's default), "apikey" (Elasticsearch), "basic"
    # (token is user:password), "bearer" (HTTP NDJSON default), "token" (the header is the token)
    auth: str = ""
    es_namespace: str = "default"  # Elasticsearch data stream logs-emailauth.audit-<namespace>
    syslog_max_message_bytes: int = 8192
    sse_kms_key_id: Optional[str] = None  # S3 sink and quarantine: SSE-KMS with this key, else SSE-S3
    # Microsoft Sentinel (Logs Ingestion API): the rule and stream, and the Entra app that may write
    sentinel_rule_id: Optional[str] = None
    sentinel_stream: str = "Custom-EmailAuthAudit_CL"
    azure_tenant_id: Optional[str] = None
    azure_client_id: Optional[str] = None
    azure_client_secret: Optional[str] = field(default=None, repr=False)
    azure_authority: str = "https://login.microsoftonline.com"
    # Google SecOps: the instance (FORWARDER_SECOPS_*) and the service account's key (a path or a
    # secretsmanager:/ssm: reference, not the key itself)
    secops_project: Optional[str] = None
    secops_region: Optional[str] = None
    secops_instance: Optional[str] = None
    secops_credentials: Optional[str] = None
    # Security Lake sink: the accountId partition: a 12-digit account, "external[_<id>]" or "sts"
    securitylake_account_id: str = "external"
