"""The configuration table (DESIGN §6): every FORWARDER_* variable once, with its kind (type and
bounds), default, secrecy, where it applies and what reads it. Parsing (``load_settings``), the CLI
flags, the README table (``tools/config_table.py``), the Splunk input's field names, the tenants
document's fields (``tenants``) and the checks of template.yaml's environment all come from here.
The core's variables are listed below; each sink declares its own with its options (``Options``
in its module), and ``variables()`` puts them in, so adding a sink touches nothing here.

One job, one long list: a variable per entry, which is why the module is past 300 lines.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, Optional, Tuple

from ..kinds import Choice, Duration, Flag, Integer, Rate, Seconds, Text, Url, secret_reference
from ..logs import quoted
from ..normalize import formats
from ..quarantine import location_problem as quarantine_location_problem
from ..sinks import own_variables, sink_variables
from ..sinks import schemes as sink_schemes
from ..state import location_problem as state_location_problem
from ..variables import EVERYWHERE as EVERYWHERE
from ..variables import FANOUT as FANOUT
from ..variables import LAMBDA as LAMBDA
from ..variables import PER_TENANT as PER_TENANT
from ..variables import SHARED as SHARED
from ..variables import TENANT_ONLY as TENANT_ONLY
from ..variables import Variable as Variable
from .lists import Choices, Domains, Emails, Filters
from .places import Headers, Location, SinkUri

OBJECT_TYPES = ("user", "domain")
FORMATS = tuple(formats())
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS = ("auto", "json", "text")
MAX_LOOKBACK_S = 20 * 366 * 86400  # twenty years: far past any audit history, far inside datetime


def _fifo_queue(text: str) -> Optional[str]:
    return (
        None
        if text.rstrip("/").endswith(".fifo")
        else f"expected an SQS FIFO queue (.fifo), got {quoted(text)}"
    )


def _absolute_path(text: str) -> Optional[str]:
    return None if text.startswith("/") else f"must start with / (got {quoted(text)})"


V = Variable
# The core's variables; each sink declares its own (``sinks.sink_variables``), placed after the
# settings every sink shares by ``variables()``.
_CORE: Tuple[Variable, ...] = (
    V(
        "FORWARDER_API_URL",
        "base URL of the platform API (`https://`; plain `http://` only for loopback hosts)",
        Url(),
        field="api_url",
        splunk="account:api_url",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_CLIENT_ID",
        "API client id generated in the portal (Settings → Generate API Secret)",
        Text(),
        field="client_id",
        splunk="account:client_id",
        tenant=TENANT_ONLY,
    ),
    V(
        "FORWARDER_CLIENT_SECRET",
        "API client secret",
        Text(),
        secret=True,
        field="client_secret",
        tenant=TENANT_ONLY,
    ),
    V(
        "FORWARDER_CREDENTIALS",
        "instead of the two above: `secretsmanager:<id>` or `ssm:<name>` holding JSON "
        '`{"client_id","client_secret"}`',
        Text(secret_reference, "reference"),
        field="credentials_ref",
        tenant=TENANT_ONLY,
    ),
    V(
        "FORWARDER_TOKEN_PATH",
        "token endpoint path (some tenants use `/v1/cp/oauth/token`)",
        Text(_absolute_path, "path"),
        "/v1/ep/token",
        field="token_path",
        splunk="account:token_path",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_OBJECT_TYPES",
        "object types to pull",
        Choices(OBJECT_TYPES),
        "user,domain",
        field="object_types",
        splunk="input:object_types",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_USERS",
        "comma list of user emails; empty: every user the users endpoint lists",
        Emails(),
        field="users",
        splunk="input:users",
        tenant=TENANT_ONLY,
    ),
    V(
        "FORWARDER_MAX_USERS",
        "the most users the users endpoint may list when `FORWARDER_USERS` is empty (a stream each); "
        "a longer listing fails the run with a message naming this setting",
        Integer(1),
        "10000",
        field="max_users",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_DOMAINS",
        "comma list of domains, in any form (`xn--bcher-kva.example` or `bücher.example`); sent in "
        "Unicode form",
        Domains(),
        field="domains",
        splunk="input:domains",
        tenant=TENANT_ONLY,
    ),
    V(
        "FORWARDER_DISCOVER_DOMAINS",
        "also pull every domain the `/v1/cp/domains` endpoint lists. Not in the spec (public material "
        "says the real service has it): opt-in, and a service without it fails the run with a message "
        "naming this setting",
        Flag(),
        "false",
        field="discover_domains",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_FILTERS",
        "comma list of `filterable_action` prefixes (`user.login`, `domain.`); empty: everything. User "
        "filters apply to user streams, domain filters to domain streams",
        Filters(),
        field="filters",
        splunk="input:filters",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_FORMAT",
        "event format (see [Events](#events))",
        Choice(FORMATS),
        "ecs",
        field="format",
        splunk="input:event_format",
    ),
    V(
        "FORWARDER_INCLUDE_ORIGINAL",
        "put the raw record in `event.original` (ECS) / `raw_data` (OCSF)",
        Flag(),
        "true",
        field="include_original",
    ),
    V(
        "FORWARDER_HEALTH_EVENTS",
        "after every run (failed, stopped or skipped too), send one health event through the sink: "
        "status, counts, lag, API calls, duration (dataset `emailauth.forwarder.health`, Splunk "
        "sourcetype `<FORWARDER_HEC_SOURCETYPE>:health`; see [Forwarder health](#forwarder-health))",
        Flag(),
        "true",
        field="health_events",
    ),
    V(
        "FORWARDER_VENDOR",
        "`observer.vendor` / CEF vendor / OCSF `metadata.product.vendor_name`",
        Text(),
        "Fortra",
        field="vendor",
    ),
    V(
        "FORWARDER_PRODUCT",
        "`observer.product` / CEF product / OCSF `metadata.product.name`",
        Text(),
        "EmailAuth Platform",
        field="product",
    ),
    V(
        "FORWARDER_STATE",
        "state location: a directory, `s3://bucket/prefix`, `dynamodb://table` or "
        "`kvstore://host:8089/<app>/<collection>/<scope>` (Splunk KV store, see "
        "[Delivery state](#delivery-state-kv-store))",
        Location(state_location_problem),
        "./state",
        field="state",
    ),
    V(
        "FORWARDER_SPLUNK_TOKEN",
        "splunkd session key or authentication token for a `kvstore://` state; required with one",
        Text(),
        secret=True,
        field="splunk_token",
    ),
    V(
        "FORWARDER_SINK",
        "where events go, see [Sinks](#sinks): " + ", ".join(f"`{s}`" for s in sink_schemes()),
        SinkUri(),
        "stdout",
        field="sink.uri",
    ),
    V(
        "FORWARDER_QUARANTINE",
        "where events the sink refused for good, and records that cannot be placed in time, are kept: "
        "a directory or `s3://bucket/prefix` (see `quarantine list` / `replay`)",
        Location(quarantine_location_problem),
        "./quarantine",
        field="quarantine",
    ),
    V(
        "FORWARDER_SINK_TOKEN",
        "the sink's secret (HEC token, Elasticsearch API key, collector token); never put it in the URI",
        Text(),
        secret=True,
        field="sink.token",
    ),
    V(
        "FORWARDER_SINK_AUTH",
        "how `FORWARDER_SINK_TOKEN` is sent (default: the sink's own)",
        Choice(("apikey", "basic", "bearer", "token"), optional=True),
        field="sink.auth",
    ),
    V(
        "FORWARDER_SINK_HEADERS",
        "extra HTTP headers, `Name: value; Other: value` (may hold tokens)",
        Headers(),
        secret=True,
        field="sink.headers",
    ),
    V(
        "FORWARDER_SINK_CA_BUNDLE",
        "PEM CA bundle for the sink's TLS (private CAs)",
        Text(shown="path"),
        field="sink.ca_bundle",
    ),
    V(
        "FORWARDER_SINK_VERIFY_TLS",
        "verify the sink's TLS certificate",
        Flag(),
        "true",
        field="sink.verify_tls",
    ),
    V("FORWARDER_SINK_GZIP", "gzip request bodies", Flag(), "true", field="sink.gzip"),
    V(
        "FORWARDER_BATCH_EVENTS",
        "events per sink request (empty: the sink's default, 500 for HEC)",
        Integer(1),
        field="sink.batch_events",
    ),
    V(
        "FORWARDER_BATCH_BYTES",
        "bytes per sink request before compression (empty: the sink's default, 900,000 for HEC)",
        Integer(1024, unit="bytes"),
        field="sink.batch_bytes",
    ),
    V(
        "FORWARDER_S3_KMS_KEY_ID",
        "KMS key for the S3 sink and quarantine (empty: SSE-S3)",
        Text(),
        field="sink.sse_kms_key_id",
    ),
    # Microsoft Sentinel sink (forwarder/sinks/sentinel.py)
    V(
        "FORWARDER_AZURE_CLIENT_SECRET_SECRET",
        "`secretsmanager:<id>` or `ssm:<name>` holding the Entra app's client secret, as text or JSON "
        '`{"client_secret"}` (instead of `FORWARDER_AZURE_CLIENT_SECRET`)',
        Text(secret_reference, "reference"),
        where=LAMBDA,
    ),
    V(
        "FORWARDER_INITIAL_LOOKBACK",
        "first-run window per stream, e.g. `14d`, `13mo` (a month counts 31 days; at most 20 years)",
        Duration(MAX_LOOKBACK_S),
        "14d",
        field="initial_lookback_s",
        splunk="input:initial_lookback",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_LOOKBACK_WINDOW",
        "window behind the watermark in which late records are still picked up",
        Duration(MAX_LOOKBACK_S),
        "1h",
        field="lookback_window_s",
    ),
    V(
        "FORWARDER_TIE_MARGIN",
        "how far behind the watermark each poll reads again (records sharing its second, or a little"
        " late); records later than that are found by a deep re-sweep, and known by id for"
        " `FORWARDER_LOOKBACK_WINDOW`",
        Duration(MAX_LOOKBACK_S),
        "5s",
        field="tie_margin_s",
    ),
    V(
        "FORWARDER_PAGE_LIMIT",
        "records per API page (the documented maximum)",
        Integer(1, 10000),
        "200",
        field="page_limit",
    ),
    V(
        "FORWARDER_MAX_PAGES",
        "page cap per stream and pass (an oldest-first pass that hits it goes on in the next pass)",
        Integer(1),
        "1000",
        field="max_pages",
    ),
    V(
        "FORWARDER_MAX_RECORDS_PER_PASS",
        "new records held in memory per stream and pass (bounds memory on any backlog)",
        Integer(1),
        "5000",
        field="max_records_per_pass",
    ),
    V(
        "FORWARDER_CONCURRENCY",
        "streams pulled at once; also the most API requests in flight, halved on each 429 and grown "
        "back by one per round of answered requests",
        Integer(1, 64),
        "4",
        field="concurrency",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_MAX_RPS",
        "API requests per second at most, shared by every stream of the run (a token bucket), e.g. "
        "`1` or `0.5`; empty: unlimited. Each tenant has its own bucket, at this rate unless it sets "
        "its own",
        Rate(),
        field="max_rps",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_HTTP_TIMEOUT",
        "seconds an HTTP call (API, sink, S3 quarantine, S3/DynamoDB state, the SQS work queue, a "
        "Secrets Manager or SSM secret, the tenants document in S3; for the AWS ones a whole boto3 "
        "call, its retries included) may take in total, body included: a server trickling its "
        "answer, or a server or proxy trickling its side of a TLS handshake or SOCKS negotiation, "
        "is cut at this deadline and the try counts as failed",
        Seconds(1, 900, unit="seconds"),
        "60",
        field="http_timeout_s",
    ),
    V(
        "FORWARDER_MAX_ATTEMPTS",
        "tries per request to the API and to the sink (HTTP, syslog, S3, Firehose) on 429, 5xx, a "
        "proxy's 200 web page and every transport error (refused, reset, timeout, a body cut mid-way, "
        "the total deadline)",
        Integer(1, 20),
        "5",
        field="max_attempts",
    ),
    V(
        "FORWARDER_LEASE_TTL",
        "seconds a run's lease lasts unless renewed",
        Integer(30, unit="seconds"),
        "900",
        field="lease_ttl_s",
    ),
    V(
        "FORWARDER_SCHEDULE_INTERVAL",
        "how often runs start (the cron line, the EventBridge rate, the Splunk input's interval; "
        "`run --interval` sets it): the run budget and the revisit defaults below are sized to it",
        Duration(MAX_LOOKBACK_S),
        "5m",
        field="schedule_interval_s",
    ),
    V(
        "FORWARDER_RUN_BUDGET_CALLS",
        "API requests a run may make before it starts no more streams; the next run goes on where it "
        "stopped. Empty: 80% of what `FORWARDER_MAX_RPS` allows in `FORWARDER_SCHEDULE_INTERVAL` "
        "(unlimited without a rate)",
        Integer(1),
        field="run_budget_calls",
        tenant=PER_TENANT,
    ),
    V(
        "FORWARDER_RUN_BUDGET_TIME",
        "time a run may take before it starts no more streams (empty: 80% of "
        "`FORWARDER_SCHEDULE_INTERVAL`, so a run is over before the next one starts)",
        Duration(MAX_LOOKBACK_S, optional=True),
        field="run_budget_time_s",
    ),
    V(
        "FORWARDER_HOT_WINDOW",
        "a stream that delivered a record within this time is polled every run; one that delivers "
        "often stays so for up to four times as long (empty: 12 times `FORWARDER_SCHEDULE_INTERVAL`)",
        Duration(MAX_LOOKBACK_S, optional=True),
        field="hot_window_s",
    ),
    V(
        "FORWARDER_COLD_REVISIT",
        "every user stream is polled at least this often; the others take turns (empty: 6 times "
        "`FORWARDER_SCHEDULE_INTERVAL`)",
        Duration(MAX_LOOKBACK_S, optional=True),
        field="cold_revisit_s",
    ),
    V(
        "FORWARDER_DOMAIN_REVISIT",
        "every domain stream is polled at least this often: a backstop, since the actors' user streams "
        "return domain records too (empty: 72 times `FORWARDER_SCHEDULE_INTERVAL`)",
        Duration(MAX_LOOKBACK_S, optional=True),
        field="domain_revisit_s",
    ),
    V(
        "FORWARDER_INDEX_REVISIT",
        "where the service honours an org-wide (name-less) query, which names the streams holding new "
        "records, every stream of that object type is still polled at least this often: a backstop "
        "against an answer that lacks records (empty: 576 times `FORWARDER_SCHEDULE_INTERVAL`, 48 hours "
        "at 5 minutes). Once an answer is caught lacking one, the bounds above apply at once",
        Duration(MAX_LOOKBACK_S, optional=True),
        field="index_revisit_s",
    ),
    V(
        "FORWARDER_USERS_CACHE",
        "how long the users list is reused from the scheduler document before the users endpoint is "
        "asked again (`0s`: every run)",
        Duration(MAX_LOOKBACK_S),
        "1h",
        field="users_cache_s",
    ),
    V("FORWARDER_LOG_LEVEL", "log level", Choice(LOG_LEVELS, upper=True), "INFO", field="log_level"),
    V(
        "FORWARDER_LOG_FORMAT",
        "CLI output: `auto` (progress line, readable lines and tables when stderr is a terminal, else "
        "JSON lines), `json`, `text` (see [At a terminal](#at-a-terminal)); the Lambda and Splunk "
        "runtimes always log JSON",
        Choice(LOG_FORMATS),
        "auto",
        field="log_format",
    ),
    V(
        "FORWARDER_TENANTS",
        "the [tenants document](#many-organizations-tenants): a JSON file, `s3://bucket/key`, "
        "`secretsmanager:<id>` or `ssm:<name>`; empty: one organization from the variables above",
        Text(shown="path or reference"),
    ),
    V(
        "FORWARDER_TENANT_CONCURRENCY",
        "tenants run at once (each with its own `FORWARDER_CONCURRENCY` streams)",
        Integer(1, 64),
        "4",
    ),
    V(
        "FORWARDER_SINK_TOKEN_SECRET",
        "`secretsmanager:<id>` or `ssm:<name>` holding the sink token, as text or JSON "
        '`{"token"}` (instead of `FORWARDER_SINK_TOKEN`)',
        Text(secret_reference, "reference"),
        where=LAMBDA,
    ),
    V(
        "FORWARDER_DEADLINE_MARGIN",
        "start no more streams once less than this is left of the invocation",
        Duration(),
        "60s",
        where=LAMBDA,
    ),
    V(
        "FORWARDER_METRICS_NAMESPACE",
        "CloudWatch namespace of the run's embedded metrics",
        Text(),
        "EmailAuthForwarder",
        where=LAMBDA,
    ),
    V(
        "FORWARDER_QUEUE_URL",
        "the SQS FIFO work queue (`.fifo`) the planner fills and the workers drain; required in fan-out mode",
        Text(_fifo_queue, "URL", required="required in fan-out mode (the work queue's URL)"),
        where=FANOUT,
    ),
    V("FORWARDER_SHARD_SIZE", "streams per work item", Integer(1, 5000), "200", where=FANOUT),
    V(
        "FORWARDER_CYCLE_MAX_AGE",
        "an unfinished planning cycle older than this no longer holds back the next one",
        Duration(),
        "1h",
        where=FANOUT,
    ),
)

_SINKS_AFTER = "FORWARDER_BATCH_BYTES"  # the last setting every sink shares
_CORE_BY_NAME = {v.name: v for v in _CORE}
_SINK = _CORE_BY_NAME["FORWARDER_SINK"]


@functools.cache
def variables() -> Tuple[Variable, ...]:
    """Every variable, in the README's order: the core's, and the sinks' own after the settings every
    sink shares. The first call imports every sink module (importing this module imports none)."""
    return _with_sinks(sink_variables())


def variable_named(name: str) -> Variable:
    """The variable ``name`` (KeyError for none), importing no sink module for a core one."""
    return _CORE_BY_NAME.get(name) or by_name()[name]


def variables_for(sink: Optional[str]) -> Tuple[Variable, ...]:
    """The core's variables and those of the sink ``sink`` (FORWARDER_SINK's text; blank: its
    default) chooses, in ``variables()``'s order, importing that sink's module alone: what a run
    with that sink reads. ValueError when no sink of this build has its scheme."""
    text = sink.strip() if sink and sink.strip() else _SINK.default or ""
    return _with_sinks(own_variables(text))


def _with_sinks(sinks: Tuple[Variable, ...]) -> Tuple[Variable, ...]:
    at = next(n for n, v in enumerate(_CORE) if v.name == _SINKS_AFTER) + 1
    return (*_CORE[:at], *sinks, *_CORE[at:])


@functools.cache
def by_name() -> Dict[str, Variable]:
    return {v.name: v for v in variables()}


def __getattr__(name: str) -> Any:
    """``VARIABLES`` (``variables()``) and ``BY_NAME`` (``by_name()``), built on first use."""
    if name == "VARIABLES":
        return variables()
    if name == "BY_NAME":
        return by_name()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def splunk_fields(page: str) -> Dict[str, str]:
    """The add-on's fields on ``page`` (``input`` or ``account``) -> the variable each one feeds."""
    found = ((v.splunk.partition(":"), v.name) for v in variables() if v.splunk)
    return {key: name for (where, _, key), name in found if where == page}


def default_of(name: str) -> str:
    """A variable's default, as the table gives it."""
    return variable_named(name).default or ""
