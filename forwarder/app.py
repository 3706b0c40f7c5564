"""Wires settings to the real parts (API client, store, sink, formatter) and runs the pipeline.
Every runtime (CLI, Lambda, Splunk input) goes through here."""

from __future__ import annotations

import functools
import logging
import uuid
from typing import Callable, List, Optional

from . import health, retry, stop
from .api.client import ApiClient, Credentials
from .api.ratelimit import RateLimiter
from .config import Settings
from .delivery.claims import Claims
from .domains import to_unicode_domain
from .errors import ApiError, ConfigError, ForwarderError, LeaseHeld
from .logs import clip, redact, register_secrets
from .normalize import Formatter, NormalizeOptions, get_formatter
from .normalize.health import health_event
from .observer import IGNORE, RunObserver
from .pipeline import RunContext, new_owner, run_streams
from .quarantine import Quarantine, open_quarantine
from .reading.pass_ import RecordSource
from .reading.select import Limits
from .reading.trail import TrailReader
from .report import RunReport
from .retry import REAL_TIME, Pace
from .scheduling.budget import Stops
from .scheduling.orgindex import Hints, IndexSource
from .scheduling.policy import policy_for
from .scheduling.scheduler import Scheduler
from .sinks import health_settings, open_sink, takes_health_events
from .sinks.base import Sink
from .state import open_store_for
from .state.store import Lease, StateStore
from .streams import Stream, domain_name, plan_streams, user_email
from .timeutil import format_us, now_us

log = logging.getLogger(__name__)


def credentials_for(settings: Settings) -> Credentials:
    if settings.credentials_ref:
        from .credentials import load_credentials  # boto3 is only needed here

        creds = load_credentials(settings.credentials_ref, timeout_seconds=settings.http_timeout_s)
    elif settings.client_id and settings.client_secret:
        creds = Credentials(settings.client_id, settings.client_secret)
    else:  # load_settings already refuses this; guard direct callers
        raise ConfigError(["FORWARDER_CLIENT_ID/FORWARDER_CLIENT_SECRET or FORWARDER_CREDENTIALS: required"])
    register_secrets([creds.client_secret])
    return creds


def build_client(
    settings: Settings, limiter: Optional[RateLimiter] = None, pace: Pace = REAL_TIME
) -> ApiClient:
    """The API client of ``settings``; its retries wait at ``pace``, as does its own rate limiter
    when the caller passes none."""
    return ApiClient(
        settings.api_url,
        credentials_for(settings),
        token_path=settings.token_path,
        timeout=settings.http_timeout_s,
        retry=pace.policy(settings.max_attempts),
        limiter=limiter or build_limiter(settings, pace),
        proxy=settings.api_proxy,
    )


def build_limiter(settings: Settings, pace: Pace = REAL_TIME) -> RateLimiter:
    """The run's client-side limits on API requests (FORWARDER_MAX_RPS, FORWARDER_CONCURRENCY)."""
    return RateLimiter(settings.max_rps, settings.concurrency, clock=pace.clock, sleep=pace.sleep)


def plan(settings: Settings, client: ApiClient, scheduler: Optional[Scheduler] = None) -> List[Stream]:
    """Every stream of the organization. With ``scheduler``, the users list comes from its cache when
    fresh, and the actors the list does not name get streams too (``scheduling.actors``)."""
    users: List[str] = list(settings.users)
    if "user" in settings.object_types and not users:
        fetch = functools.partial(list_users, settings, client)
        users = scheduler.users(fetch) if scheduler is not None else fetch()
    domains: List[str] = list(settings.domains)
    if "domain" in settings.object_types and settings.discover_domains:
        domains.extend(discover_domains(settings, client))
    elif "domain" in settings.object_types and not domains:
        log.info("no FORWARDER_DOMAINS configured: domain records come through the user streams only")
    return plan_streams(settings.object_types, users, domains, settings.filters)


def list_users(settings: Settings, client: ApiClient) -> List[str]:
    """The emails the users endpoint lists."""
    listed = client.users(settings.page_limit, settings.max_pages, settings.max_users)
    emails = [user_email(item) for item in listed]
    users = [e for e in emails if e]
    if len(users) < len(listed):
        log.warning("users without an email were skipped", extra={"count": len(listed) - len(users)})
    return users


def discover_domains(settings: Settings, client: ApiClient) -> List[str]:
    """Every domain the (unspecified) domains endpoint lists, in Unicode form."""
    try:
        listed = client.domains(settings.page_limit, settings.max_pages)
    except ApiError as exc:
        raise ApiError(
            f"FORWARDER_DISCOVER_DOMAINS: the domains endpoint failed ({exc})", exc.status
        ) from None
    found: List[str] = []
    for item in listed:
        name = domain_name(item)
        try:
            found.append(to_unicode_domain(name or ""))
        except (UnicodeError, ValueError):
            log.warning("a listed domain has no usable name; skipped", extra={"item": clip(str(item))})
    return found


def formatter_on_demand(name: str) -> Callable[[], Formatter]:
    """The formatter named ``name``, looked up (its module imported) the first time a pass asks
    for it: a run with nothing new (the common case every few minutes) never pays for loading it.
    Settings have checked the name."""
    return functools.lru_cache(maxsize=None)(functools.partial(get_formatter, name))


Planner = Callable[[Settings, ApiClient], List[Stream]]


def consult_index(
    settings: Settings,
    scheduler: Scheduler,
    client: ApiClient,
    planned: List[Stream],
    delivered: Callable[[str], bool],
    source: bool = True,
) -> Hints:
    """The org-wide index's word on ``planned`` (``Scheduler.consult``), before ``scheduler.choose``;
    ``delivered``: the tenant's index of delivered ids. ``source=False``: an index only (the fan-out
    planner)."""
    return scheduler.consult(
        client,
        planned,
        delivered,
        page_limit=settings.page_limit,
        max_pages=settings.max_pages,
        window_s=settings.lookback_window_s,
        probe_since_us=now_us() - settings.initial_lookback_s * 1_000_000,
        source=source,
    )


def run_once(
    settings: Settings,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    order: Optional[Callable[[List[Stream]], List[Stream]]] = None,
    store: Optional[StateStore] = None,
    sink: Optional[Sink] = None,
    quarantine: Optional[Quarantine] = None,
    observer: RunObserver = IGNORE,
    planner: Optional[Planner] = None,
    owner: Optional[str] = None,
    runtime: str = "cli",
    tenant: str = "",
    health_sink: Optional[Sink] = None,
    pace: Pace = REAL_TIME,
) -> RunReport:
    """One run. Errors end up in the report; the caller decides the exit status.

    ``planner`` gives every stream of the organization (ownership of overlapping records is decided
    over all of them); by default ``plan`` with the scheduler's users cache. The scheduler
    (``forwarder.scheduling``) then picks the streams this run polls and their order, and the run
    stops starting streams once its budget is spent. ``order`` replaces that choice (a fan-out worker
    passes its shard, chosen by the planner's scheduler); the run still tells the scheduler what it
    polled. ``owner`` names the lease holder (default: this process).

    At the end, whatever happened (a failure, a stop, the lease held), one health event goes through
    ``health_sink`` (the caller's, left open), else a sink of the run's own opened for it with the
    health sourcetype (``health_settings``), unless ``FORWARDER_HEALTH_EVENTS`` is off or the caller
    passed ``sink`` alone (a test's, or a tool's: its events are the caller's to count). ``runtime``
    and ``tenant`` say who ran, in that event. Everything the run opens waits at ``pace``."""
    register_secrets(settings.secrets())
    for notice in settings.notices:
        log.warning("configuration: %s", notice)
    retry.reset_notices()
    report = RunReport(started=format_us(now_us()))
    store = store or open_store_for(settings)
    owner = owner or new_owner()
    try:
        lease = store.acquire_lease(owner, settings.lease_ttl_s)
    except LeaseHeld as exc:
        report.skip_reason = str(exc)
        report.finished = format_us(now_us())
        log.warning("run skipped: another run holds the lease", extra={"reason": report.skip_reason})
        if sink is None or health_sink is not None:
            send_health(settings, report, store.location, runtime, tenant, health_sink, pace)
        return report
    policy = policy_for(settings)
    scheduler = Scheduler.for_store(store, policy, pace.wall_clock, window_s=settings.lookback_window_s)
    limiter = build_limiter(settings, pace)
    client = None
    planned: Optional[List[Stream]] = None
    own_sink = sink is None
    try:
        scheduler.load()
        _resume_bucket(limiter, scheduler)
        client = api = build_client(settings, limiter, pace)
        # The token first: a token endpoint that fails fails the run here, once, not every stream.
        client.authenticate()
        planned = (planner or functools.partial(plan, scheduler=scheduler))(settings, client)
        claims = Claims.load(store, settings.lookback_window_s, settings.tie_margin_s)
        source: RecordSource = TrailReader(client, settings.page_limit, settings.max_pages)
        if order is None:
            hints = consult_index(settings, scheduler, client, planned, claims.delivered)
            if any(hints.answers.values()):  # the org-wide streams ship the answers' records
                source = IndexSource(source, hints.answers)
            chosen = scheduler.choose(planned)
            streams, report.not_due = chosen.order, [s.key for s in chosen.not_due]
            stops = Stops(should_stop, policy.budget_calls, policy.budget_time_s, lambda: api.requests_sent)
        else:
            streams = order(planned)
            stops = Stops(should_stop, None, None, lambda: api.requests_sent)
        observer.started(streams, lambda: api.requests_sent)
        sink = sink or open_sink(settings.sink, pace=pace)
        ctx = RunContext(
            source=source,
            store=store,
            sink=sink,
            formatter=formatter_on_demand(settings.format),
            quarantine=quarantine
            or open_quarantine(settings.quarantine, settings.sink.sse_kms_key_id, settings.http_timeout_s),
            limits=Limits(
                settings.initial_lookback_s,
                settings.lookback_window_s,
                settings.max_records_per_pass,
                settings.tie_margin_s,
            ),
            claims=claims,
            options=NormalizeOptions(
                ingest_time_us=0,
                vendor=settings.vendor,
                product=settings.product,
                include_original=settings.include_original,
            ),
            lease=lease,
            lease_ttl_s=settings.lease_ttl_s,
            should_stop=stops,  # SIGTERM, the caller's deadline, or the run's budget
            observer=observer,
            on_records=scheduler.seen,
        )
        run_streams(ctx, streams, settings.concurrency, report)
        report.stop_reason = stops.reason
    except stop.Stopped:  # during planning: nothing was shipped, nothing is committed, not a failure
        log.warning("run abandoned on a stop request")
    except (ForwarderError, ValueError) as exc:
        report.error = redact(str(exc))
        log.error("run failed", extra={"error": report.error})
    finally:
        try:
            if own_sink and sink is not None:
                sink.close()
            if client is not None:
                client.close()
            if planned is not None:
                with stop.shielded(stop.FINISHING):  # what the run did is remembered, a stop requested or not
                    scheduler.finish(planned, report, limiter.bucket.level() if limiter.bucket else None)
        finally:
            _release(lease, report)
    report.finished = format_us(now_us())
    if own_sink or health_sink is not None:
        send_health(settings, report, store.location, runtime, tenant, health_sink, pace)
    for stream in report.streams:
        # Quiet streams log at DEBUG: thousands of idle user streams would drown the rest.
        level = logging.INFO if stream.new or stream.error or stream.quarantined else logging.DEBUG
        if log.isEnabledFor(level):  # the dict is not free: skip it for lines nobody keeps
            log.log(level, "stream finished", extra=stream.to_dict())
    for error, keys in report.failures():
        if len(keys) == 1:
            log.error("stream failed", extra={"stream": keys[0], "error": error})
        else:
            log.error("%d streams failed", len(keys), extra={"error": error, "first": keys[0]})
    log.info(
        "run finished",
        extra={
            "ok": report.ok,
            **report.totals(),
            "not_started": len(report.not_started),
            "not_due": len(report.not_due),
            "stop_reason": report.stop_reason,
        },
    )
    return report


def send_health(
    settings: Settings,
    report: RunReport,
    state_location: str,
    runtime: str,
    tenant: str,
    sink: Optional[Sink] = None,
    pace: Pace = REAL_TIME,
) -> None:
    """One health event for the run ``report`` tells, through ``sink`` or a sink opened for it. Never
    the run's failure: a sink that refuses it is logged (the silence rule then sees the gap). A first
    stop lets it go (bounded by the sink's own deadlines); a second one cuts it."""
    if not settings.health_events or not takes_health_events(settings.sink):
        return
    origin = health.Origin(
        runtime, tenant, health.forwarder_id(state_location, tenant), settings.schedule_interval_s
    )
    summary = health.summary(report, origin, uuid.uuid4().hex, stop.requested())
    options = NormalizeOptions(ingest_time_us=0, vendor=settings.vendor, product=settings.product)
    event = health_event(summary, settings.format, options)
    own = sink is None
    try:
        with stop.shielded(stop.FINISHING):
            if sink is None:
                sink = open_sink(health_settings(settings.sink), pace=pace)
            try:
                result = sink.send([event])
            finally:
                if own:
                    sink.close()
        if result.rejected:
            log.warning("health event refused by the sink", extra={"reason": result.rejected[0].reason})
        else:
            log.debug("health event sent", extra={"status": summary["status"], "run_id": summary["run_id"]})
    except Exception as exc:  # the run is over and told: its health event never breaks it
        log.warning("health event not sent", extra={"error": redact(f"{type(exc).__name__}: {exc}")})


def _release(lease: Lease, report: RunReport) -> None:
    """Release the run lease, a stop requested or not; a failure is the run's error, told (every
    later run is refused until the lease expires), not a traceback."""
    try:
        lease.release()
    except ForwarderError as exc:
        report.error = report.error or redact(
            f"the run lease was not released ({exc}); later runs wait for it"
        )
        log.error("run lease not released", extra={"error": redact(str(exc))})


def _resume_bucket(limiter: RateLimiter, scheduler: Scheduler) -> None:
    """Start the rate bucket where the last run left it (refilled since), when the rate is known."""
    if limiter.bucket is None:
        return
    tokens = scheduler.bucket(limiter.bucket.rate)
    if tokens is not None:
        limiter.bucket.start_from(tokens)
