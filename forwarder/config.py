"""The configuration contract (DESIGN §6): one table of settings drives environment parsing, CLI
flags and the README. Bad configuration fails before any network call, one message per problem."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, Optional, Tuple

import idna

from .domains import to_unicode_domain
from .errors import ConfigError
from .http import check_url, redact_url, secret_problem
from .normalize import formats
from .sinks import check_sink
from .sinks import schemes as sink_schemes
from .sinks.http_ndjson import parse_headers
from .sinks.settings import SinkSettings
from .state import location_problem
from .timeutil import parse_duration

OBJECT_TYPES = ("user", "domain")
FORMATS = tuple(formats())
_FILTER = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]*)*$")
_EMAIL = re.compile(r"^[^@\s,]+@[^@\s,]+$")
MAX_LOOKBACK_S = 20 * 366 * 86400  # twenty years: far past any audit history, far inside datetime


@dataclass(frozen=True)
class Variable:
    name: str
    help: str
    default: Optional[str] = None
    secret: bool = False


VARIABLES: Tuple[Variable, ...] = (
    Variable("FORWARDER_API_URL", "base URL of the platform API (https://; http only for loopback)"),
    Variable("FORWARDER_CLIENT_ID", "API client id generated in the portal"),
    Variable("FORWARDER_CLIENT_SECRET", "API client secret", secret=True),
    Variable("FORWARDER_CREDENTIALS", "secretsmanager:<id> or ssm:<name> holding {client_id, client_secret}"),
    Variable("FORWARDER_TOKEN_PATH", "token endpoint path", "/v1/ep/token"),
    Variable("FORWARDER_OBJECT_TYPES", "object types to pull: user, domain", "user,domain"),
    Variable("FORWARDER_USERS", "comma list of user emails (empty: every user from the users endpoint)", ""),
    Variable("FORWARDER_DOMAINS", "comma list of domains (any form; converted to Unicode)", ""),
    Variable(
        "FORWARDER_DISCOVER_DOMAINS",
        "also pull every domain the /v1/cp/domains endpoint lists (not in the spec: opt-in)",
        "false",
    ),
    Variable("FORWARDER_FILTERS", "comma list of filterable_action prefixes (empty: everything)", ""),
    Variable(
        "FORWARDER_STATE", "state location: a directory, s3://bucket/prefix or dynamodb://table", "./state"
    ),
    Variable("FORWARDER_SINK", "where events go: " + ", ".join(sink_schemes()), "stdout"),
    Variable(
        "FORWARDER_QUARANTINE",
        "where events the sink refused for good are kept: a directory or s3://bucket/prefix",
        "./quarantine",
    ),
    Variable("FORWARDER_SINK_TOKEN", "the sink's secret (HEC token, API key)", secret=True),
    Variable(
        "FORWARDER_SINK_AUTH",
        "how FORWARDER_SINK_TOKEN is sent: apikey, basic, bearer, token (default: the sink's own)",
    ),
    Variable(
        "FORWARDER_SINK_HEADERS", "extra HTTP headers for the sink, 'Name: value; Other: value'", secret=True
    ),
    Variable(
        "FORWARDER_SINK_ACCEPT_BODY",
        "HTTP collector: a regular expression its 2xx reply must match for a batch to count as delivered",
    ),
    Variable("FORWARDER_SINK_CA_BUNDLE", "PEM CA bundle for the sink's TLS"),
    Variable("FORWARDER_SINK_VERIFY_TLS", "verify the sink's TLS certificate", "true"),
    Variable("FORWARDER_SINK_GZIP", "gzip request bodies", "true"),
    Variable("FORWARDER_BATCH_EVENTS", "events per sink request (empty: the sink's default)"),
    Variable(
        "FORWARDER_BATCH_BYTES", "bytes per sink request before compression (empty: the sink's default)"
    ),
    Variable("FORWARDER_HEC_INDEX", "Splunk index (empty: the token's default index)"),
    Variable("FORWARDER_HEC_SOURCETYPE", "Splunk sourcetype", "emailauth:audit"),
    Variable("FORWARDER_HEC_SOURCE", "Splunk source", "emailauth-audit-forwarder"),
    Variable(
        "FORWARDER_HEC_HOST", "Splunk host field, also the syslog HOSTNAME (empty: HEC's default / this host)"
    ),
    Variable("FORWARDER_HEC_ACK", "wait for HEC indexer acknowledgement", "false"),
    Variable(
        "FORWARDER_SYSLOG_MAX_MESSAGE",
        "largest syslog message in bytes; larger events go to quarantine "
        "(raise rsyslog maxMessageSize to match)",
        "8192",
    ),
    Variable(
        "FORWARDER_ES_NAMESPACE",
        "Elasticsearch data stream namespace: logs-emailauth.audit-<namespace>",
        "default",
    ),
    Variable("FORWARDER_S3_KMS_KEY_ID", "KMS key for the S3 sink and quarantine (empty: SSE-S3)"),
    Variable("FORWARDER_FORMAT", "event format: " + ", ".join(FORMATS), "ecs"),
    Variable("FORWARDER_INCLUDE_ORIGINAL", "put the raw record in event.original", "true"),
    Variable("FORWARDER_VENDOR", "observer.vendor / CEF vendor", "Fortra"),
    Variable("FORWARDER_PRODUCT", "observer.product / CEF product", "EmailAuth Platform"),
    Variable("FORWARDER_INITIAL_LOOKBACK", "first-run window, e.g. 14d, 13mo", "14d"),
    Variable("FORWARDER_LOOKBACK_WINDOW", "look-back window behind the watermark for late records", "1h"),
    Variable("FORWARDER_PAGE_LIMIT", "records per API page (the API's documented maximum is 200)", "200"),
    Variable("FORWARDER_MAX_PAGES", "page cap per stream and pass", "1000"),
    Variable("FORWARDER_MAX_RECORDS_PER_PASS", "new records held in memory per stream and pass", "5000"),
    Variable("FORWARDER_CONCURRENCY", "streams pulled at once", "4"),
    Variable(
        "FORWARDER_MAX_RPS",
        "API requests per second at most, shared by every stream (empty: unlimited), e.g. 1 or 0.5",
    ),
    Variable("FORWARDER_HTTP_TIMEOUT", "seconds to wait for an HTTP response", "60"),
    Variable("FORWARDER_MAX_ATTEMPTS", "tries per HTTP request (429/5xx/connection errors)", "5"),
    Variable("FORWARDER_LEASE_TTL", "seconds a run's lease lasts unless renewed", "900"),
    Variable("FORWARDER_LOG_LEVEL", "DEBUG, INFO, WARNING, ERROR", "INFO"),
    Variable(
        "FORWARDER_LOG_FORMAT",
        "CLI output: auto (progress and tables when stderr is a terminal, else JSON lines), json, text",
        "auto",
    ),
    Variable(
        "FORWARDER_TENANTS",
        "tenants document: a JSON file, s3://bucket/key, secretsmanager:<id> or ssm:<name> "
        "(empty: one organization from these variables)",
    ),
    Variable("FORWARDER_TENANT_CONCURRENCY", "tenants run at once (with FORWARDER_TENANTS)", "4"),
)
LOG_FORMATS = ("auto", "json", "text")


def parse_log_format(raw: Optional[str]) -> str:
    """FORWARDER_LOG_FORMAT's value; ValueError names the choices. Also read alone by the commands that
    need no other setting (demo, state)."""
    value = (raw or "auto").strip().lower()
    if value not in LOG_FORMATS:
        raise ValueError(f"FORWARDER_LOG_FORMAT: choose from {', '.join(LOG_FORMATS)} (got {value!r})")
    return value


_DEFAULTS: Dict[str, Optional[str]] = {v.name: v.default for v in VARIABLES}


@dataclass(frozen=True)
class Settings:
    api_url: str
    client_id: Optional[str]
    client_secret: Optional[str] = field(repr=False)
    credentials_ref: Optional[str]
    token_path: str
    object_types: Tuple[str, ...]
    users: Tuple[str, ...]
    domains: Tuple[str, ...]
    discover_domains: bool
    filters: Tuple[str, ...]
    state: str
    quarantine: str
    sink: SinkSettings
    format: str
    include_original: bool
    vendor: str
    product: str
    initial_lookback_s: int
    lookback_window_s: int
    page_limit: int
    max_pages: int
    max_records_per_pass: int
    concurrency: int
    max_rps: Optional[float]
    http_timeout_s: float
    max_attempts: int
    lease_ttl_s: int
    log_level: str
    log_format: str = "auto"

    def secrets(self) -> list[str]:
        """Values that must never reach a log line."""
        return [s for s in (self.client_secret, self.sink.token, *self.sink.headers.values()) if s]


def _rate(text: str) -> Optional[float]:
    """Requests per second, or None (unlimited) when empty."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise ValueError(f"expected a positive number of requests per second, got {text!r}")
    return value


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class _Reader:
    """Reads variables and collects every problem instead of stopping at the first."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[str] = []

    def get(self, name: str) -> str:
        raw = self.env.get(name)
        if raw is None or raw.strip() == "":
            return _DEFAULTS.get(name) or ""
        return raw.strip()

    def optional(self, name: str) -> Optional[str]:
        return self.get(name) or None

    def convert(self, name: str, fn: Callable[[str], object], fallback: object) -> object:
        text = self.get(name)
        try:
            return fn(text)
        except (ValueError, TypeError) as exc:
            self.problems.append(f"{name}: {exc}")
            return fallback

    def boolean(self, name: str) -> bool:
        text = self.get(name).lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        self.problems.append(f"{name}: expected true or false, got {text!r}")
        return False

    def integer(self, name: str, minimum: int, maximum: Optional[int] = None) -> int:
        text = self.get(name)
        try:
            value = int(text)
        except ValueError:
            self.problems.append(f"{name}: expected a whole number, got {text!r}")
            return minimum
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and {maximum}" if maximum is not None else ""
            self.problems.append(f"{name}: must be between {minimum}{upper}, got {value}")
            return minimum
        return value

    def optional_integer(self, name: str, minimum: int) -> Optional[int]:
        return self.integer(name, minimum) if self.get(name) else None

    def duration(self, name: str, maximum_s: int) -> int:
        value = int(self.convert(name, parse_duration, 0))  # type: ignore[call-overload]
        if value > maximum_s:
            self.problems.append(f"{name}: at most {maximum_s // 86400} days (got {self.get(name)!r})")
            return 0
        return value


def load_settings(env: Mapping[str, str]) -> Settings:
    """Build Settings from environment-style variables; raise ConfigError listing every problem."""
    r = _Reader(env)
    p = r.problems

    api_url = r.get("FORWARDER_API_URL").rstrip("/")
    if not api_url:
        p.append("FORWARDER_API_URL: required (e.g. https://api.example.com)")
    else:
        problem = check_url(api_url, "FORWARDER_API_URL")
        if problem:
            p.append(problem)

    client_id, client_secret = r.optional("FORWARDER_CLIENT_ID"), r.optional("FORWARDER_CLIENT_SECRET")
    credentials_ref = r.optional("FORWARDER_CREDENTIALS")
    if credentials_ref:
        if not re.match(r"^(secretsmanager|ssm):.+", credentials_ref):
            p.append("FORWARDER_CREDENTIALS: expected secretsmanager:<secret id> or ssm:<parameter name>")
    elif not client_id or not client_secret:
        missing = [
            n
            for n, v in (("FORWARDER_CLIENT_ID", client_id), ("FORWARDER_CLIENT_SECRET", client_secret))
            if not v
        ]
        p.extend(f"{n}: required (or set FORWARDER_CREDENTIALS)" for n in missing)

    token_path = r.get("FORWARDER_TOKEN_PATH")
    if not token_path.startswith("/"):
        p.append(f"FORWARDER_TOKEN_PATH: must start with / (got {token_path!r})")

    object_types = tuple(t.lower() for t in _split(r.get("FORWARDER_OBJECT_TYPES")))
    bad_types = [t for t in object_types if t not in OBJECT_TYPES]
    if bad_types or not object_types:
        p.append(
            f"FORWARDER_OBJECT_TYPES: choose from {', '.join(OBJECT_TYPES)} "
            f"(got {', '.join(bad_types) or 'nothing'})"
        )

    users = tuple(_split(r.get("FORWARDER_USERS")))
    p.extend(f"FORWARDER_USERS: {u!r} is not an email address" for u in users if not _EMAIL.match(u))

    domains: list[str] = []
    for name in _split(r.get("FORWARDER_DOMAINS")):
        try:
            domains.append(to_unicode_domain(name))
        except (idna.IDNAError, UnicodeError, ValueError) as exc:
            p.append(f"FORWARDER_DOMAINS: {name!r} is not a valid domain name ({exc})")

    filters = tuple(_split(r.get("FORWARDER_FILTERS")))
    for f in filters:
        if not _FILTER.match(f):
            p.append(f"FORWARDER_FILTERS: {f!r} is not a filterable_action prefix like user.login or domain.")
    for f in filters:
        broader = [g for g in filters if g != f and f.startswith(g)]
        if broader:
            p.append(
                f"FORWARDER_FILTERS: {f!r} is already covered by {broader[0]!r} "
                "(overlapping filters would fetch records twice)"
            )

    fmt = r.get("FORWARDER_FORMAT").lower()
    if fmt not in FORMATS:
        p.append(f"FORWARDER_FORMAT: choose from {', '.join(FORMATS)} (got {fmt!r})")

    sink_uri = r.get("FORWARDER_SINK")
    scheme = (
        "stdout" if sink_uri == "stdout" else sink_uri.split("://", 1)[0].lower() if "://" in sink_uri else ""
    )
    if scheme not in sink_schemes():
        shown = redact_url(sink_uri)
        p.append(f"FORWARDER_SINK: {shown!r} is not supported (schemes: {', '.join(sink_schemes())})")
    else:
        problem = secret_problem(sink_uri, "FORWARDER_SINK")
        if problem:
            p.append(problem)

    auth = r.get("FORWARDER_SINK_AUTH").lower()
    if auth not in ("", "apikey", "basic", "bearer", "token"):
        p.append(f"FORWARDER_SINK_AUTH: choose from apikey, basic, bearer, token (got {auth!r})")
    headers: Dict[str, str] = {}
    if r.get("FORWARDER_SINK_HEADERS"):
        try:
            headers = parse_headers(r.get("FORWARDER_SINK_HEADERS"))
        except ValueError as exc:
            p.append(f"FORWARDER_SINK_HEADERS: {exc}")
    if scheme.startswith(("elasticsearch", "opensearch")) and fmt not in ("ecs", "cef"):
        p.append(
            f"FORWARDER_FORMAT: {fmt!r} documents carry no @timestamp, which an Elasticsearch data stream "
            "requires; use ecs (or cef) with an Elasticsearch sink"
        )
    timeout_s = float(r.integer("FORWARDER_HTTP_TIMEOUT", 1, 900))
    sink = SinkSettings(
        uri=sink_uri,
        token=r.optional("FORWARDER_SINK_TOKEN"),
        batch_events=r.optional_integer("FORWARDER_BATCH_EVENTS", 1),
        batch_bytes=r.optional_integer("FORWARDER_BATCH_BYTES", 1024),
        ca_bundle=r.optional("FORWARDER_SINK_CA_BUNDLE"),
        accept_body=r.optional("FORWARDER_SINK_ACCEPT_BODY"),
        verify_tls=r.boolean("FORWARDER_SINK_VERIFY_TLS"),
        timeout_seconds=timeout_s,
        gzip=r.boolean("FORWARDER_SINK_GZIP"),
        index=r.optional("FORWARDER_HEC_INDEX"),
        sourcetype=r.get("FORWARDER_HEC_SOURCETYPE"),
        source=r.get("FORWARDER_HEC_SOURCE"),
        host=r.optional("FORWARDER_HEC_HOST"),
        hec_ack=r.boolean("FORWARDER_HEC_ACK"),
        headers=headers,
        auth=auth,
        es_namespace=r.get("FORWARDER_ES_NAMESPACE"),
        syslog_max_message_bytes=r.integer("FORWARDER_SYSLOG_MAX_MESSAGE", 480, 16 * 1024 * 1024),
        sse_kms_key_id=r.optional("FORWARDER_S3_KMS_KEY_ID"),
    )

    if scheme in sink_schemes() and not any(q.startswith("FORWARDER_SINK:") for q in p):
        try:
            check_sink(sink)  # the sink's own rules (a host, a token, a file not a directory...)
        except ValueError as exc:
            p.append(str(exc) if str(exc).startswith("FORWARDER_") else f"FORWARDER_SINK: {exc}")
    for name in ("FORWARDER_STATE", "FORWARDER_QUARANTINE"):
        problem = secret_problem(r.get(name), name)
        if problem:
            p.append(problem)
    state_problem = location_problem(r.get("FORWARDER_STATE"))
    if state_problem:
        p.append(f"FORWARDER_STATE: {state_problem}")

    log_level = r.get("FORWARDER_LOG_LEVEL").upper()
    if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        p.append(f"FORWARDER_LOG_LEVEL: choose from DEBUG, INFO, WARNING, ERROR (got {log_level!r})")

    log_format = "auto"
    try:
        log_format = parse_log_format(r.get("FORWARDER_LOG_FORMAT"))
    except ValueError as exc:
        p.append(str(exc))

    settings = Settings(
        api_url=api_url,
        client_id=client_id,
        client_secret=client_secret,
        credentials_ref=credentials_ref,
        token_path=token_path,
        object_types=object_types,
        users=users,
        domains=tuple(dict.fromkeys(domains)),
        discover_domains=r.boolean("FORWARDER_DISCOVER_DOMAINS"),
        filters=filters,
        state=r.get("FORWARDER_STATE"),
        quarantine=r.get("FORWARDER_QUARANTINE"),
        sink=sink,
        format=fmt,
        include_original=r.boolean("FORWARDER_INCLUDE_ORIGINAL"),
        vendor=r.get("FORWARDER_VENDOR"),
        product=r.get("FORWARDER_PRODUCT"),
        initial_lookback_s=r.duration("FORWARDER_INITIAL_LOOKBACK", MAX_LOOKBACK_S),
        lookback_window_s=r.duration("FORWARDER_LOOKBACK_WINDOW", MAX_LOOKBACK_S),
        page_limit=r.integer("FORWARDER_PAGE_LIMIT", 1, 10000),
        max_pages=r.integer("FORWARDER_MAX_PAGES", 1),
        max_records_per_pass=r.integer("FORWARDER_MAX_RECORDS_PER_PASS", 1),
        concurrency=r.integer("FORWARDER_CONCURRENCY", 1, 64),
        max_rps=r.convert("FORWARDER_MAX_RPS", _rate, None),  # type: ignore[arg-type]
        http_timeout_s=timeout_s,
        max_attempts=r.integer("FORWARDER_MAX_ATTEMPTS", 1, 20),
        lease_ttl_s=r.integer("FORWARDER_LEASE_TTL", 30),
        log_level=log_level,
        log_format=log_format,
    )
    if p:
        raise ConfigError(p)
    return settings
