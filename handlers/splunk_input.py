"""The forwarder as the add-on's modular input. UCC generates ``bin/emailauth_audit.py`` (scheme,
splunklib protocol); it calls ``validate_input`` and ``stream_events`` here through the helper module.
Splunk runs one process per input at its ``interval``; each run is one ``run_once``.

* Settings: built from the input's fields and its account's (API URL, client id, secret, token path)
  under their own names (``config.settings_from``), so each problem names the field to fix; the
  account, the proxy and the log level come from the configuration pages through solnlib
  (``splunk_settings``). The proxy is the API client's (``Settings.api_proxy``): the process
  environment is never changed.
* Events: written through splunklib's EventWriter in the input's event format, time from the event.
  After each run one health event (``forwarder/health.py``, in the input's format, sourcetype
  ``emailauth:audit:health`` for ECS), the input's name as its ``tenant``.
* Schedule: the input's ``interval`` (in seconds) is the scheduler's ``FORWARDER_SCHEDULE_INTERVAL``.
* State: the KV store collection ``ta_fortra_emailauth_checkpoints`` (``forwarder.state.kvstore``),
  one scope per input (``InputState``, also the settings' state location and token): its
  ``checkpoint_id``, set once when the input is created (a new input of the same name gets a new
  one; deleting the input drops the scope), and within it one partition per tenant (API URL and
  client id), so an input pointed at another tenant starts afresh.
* Logs: JSON lines in ``$SPLUNK_HOME/var/log/splunk/ta_fortra_emailauth.log`` (indexed into
  ``_internal``), secrets masked; failures also go to stderr, which splunkd keeps in splunkd.log.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from logging.handlers import RotatingFileHandler
from typing import Any, Dict, List, Mapping, Optional, Sequence
from urllib.parse import quote, urlsplit

from splunklib.modularinput import Event as SplunkEvent
from splunklib.modularinput import EventWriter

from forwarder import stop
from forwarder.app import run_once
from forwarder.config import Settings, settings_from, splunk_fields
from forwarder.errors import ForwarderError
from forwarder.events import Event, SendResult
from forwarder.logs import configure, quoted
from forwarder.sinks.base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS
from forwarder.sinks.hec import hec_time
from forwarder.state.kvstore import KVStore, Splunkd

from .splunk_settings import APP, COLLECTION, Account, SettingsError, SplunkdSettings

SCHEME = "emailauth_audit"
SOURCETYPE = "emailauth:audit"
LOG_FILE = "ta_fortra_emailauth.log"
_PLACEHOLDER = Account(
    "validation", "https://api.example.com", "placeholder", "placeholder-secret", "/v1/ep/token"
)

log = logging.getLogger("ta_fortra_emailauth")

# inputs.conf key -> the FORWARDER_* variable it feeds; the account's fields, as its page names them
FIELDS = splunk_fields("input")
_ACCOUNT = {**splunk_fields("account"), "client_secret": "FORWARDER_CLIENT_SECRET"}
_NAMES = {
    **FIELDS,
    **{f"account {key}": v for key, v in _ACCOUNT.items()},
    "interval": "FORWARDER_SCHEDULE_INTERVAL",
}


@dataclass(frozen=True)
class InputState:
    """Where an input keeps its delivery state: its scope of the add-on's KV store collection on the
    splunkd that runs it, reached with the session key splunkd gave."""

    server_uri: str
    session_key: str = field(repr=False)
    scope: str

    @property
    def location(self) -> str:
        """The scope as a FORWARDER_STATE location (``kvstore://host:port/<app>/<collection>/<scope>``)."""
        netloc = urlsplit(self.server_uri).netloc
        return f"kvstore://{netloc}/{APP}/{COLLECTION}/{quote(self.scope, safe='')}"

    def open(self, partition: str) -> KVStore:
        return KVStore(
            Splunkd(self.server_uri, APP, COLLECTION, self.session_key), self.scope, partition=partition
        )


def settings_for(
    stanza: Mapping[str, Any],
    account: Account,
    quarantine: str,
    state: InputState,
    proxy: Optional[str] = None,
) -> Settings:
    """Settings from an input's fields and its account, with its state and quarantine; problems name
    the fields, not variables. ``proxy``: the Proxy page's URL, None when it is off (then the API is
    reached directly, whatever splunkd's environment says)."""
    values: Dict[str, Any] = {key: str(stanza.get(key) or "").strip() for key in FIELDS}
    interval = str(stanza.get("interval") or "").strip()
    if interval.isdigit() and int(interval) > 0:  # seconds (a cron expression keeps the default)
        values["interval"] = f"{interval}s"  # the scheduler's budget and turns
    values.update({f"account {key}": getattr(account, key) for key in _ACCOUNT})
    values.update(
        FORWARDER_STATE=state.location,
        FORWARDER_SPLUNK_TOKEN=state.session_key,
        FORWARDER_QUARANTINE=quarantine,
    )
    return settings_from(values, _NAMES, api_proxy=proxy or "")


def sourcetype_for(event_format: str) -> str:
    return SOURCETYPE if event_format == "ecs" else f"{SOURCETYPE}:{event_format}"


def scope_of(name: str, stanza: Mapping[str, Any]) -> str:
    """The input's KV store scope: its checkpoint id, or its name for a stanza written by hand."""
    return str(stanza.get("checkpoint_id") or "").strip() or f"name:{name}"


def tenant_of(settings: Settings) -> str:
    return hashlib.sha256(f"{settings.api_url}\0{settings.client_id}".encode()).hexdigest()[:16]


class EventWriterSink:
    """The forwarder's Sink over splunklib's EventWriter: splunkd reads the XML stream on stdout.

    Streams run in threads; one lock keeps each event's XML whole. A batch counts as delivered once
    written and flushed to splunkd (EventWriter flushes after every event).
    """

    name = "splunk-modinput"

    def __init__(self, writer: EventWriter, stanza: str, index: Optional[str], sourcetype: str) -> None:
        self.max_batch_events = DEFAULT_MAX_EVENTS
        self.max_batch_bytes = DEFAULT_MAX_BYTES
        self.max_in_flight = 1  # one EventWriter, in order
        self._writer = writer
        self._stanza = stanza
        self._index = index
        self._sourcetype = sourcetype
        # One whole XML <event> at a time on stdout: a batch still in flight after the run's flush
        # timed out is written by its sender thread while the main thread writes the health event.
        self._lock = threading.Lock()

    def write(self, data: str, time_us: int, sourcetype: str) -> None:
        event = SplunkEvent(
            data=data,
            stanza=self._stanza,
            time=hec_time(time_us).decode("ascii"),
            index=self._index,
            sourcetype=sourcetype,
        )
        with self._lock:
            self._writer.write_event(event)

    def send(self, batch: Sequence[Event]) -> SendResult:
        for event in batch:
            self.write(event.body.decode("utf-8"), event.time_us, self._sourcetype)
        return SendResult.all_delivered(len(batch))

    def close(self) -> None:
        """Nothing to release: the EventWriter belongs to the script."""


def configure_logging(level: str, input_name: str) -> None:
    """One JSON log file for the add-on under $SPLUNK_HOME/var/log/splunk (stderr without SPLUNK_HOME)."""
    home = os.environ.get("SPLUNK_HOME")
    handler: logging.Handler
    if home:
        directory = os.path.join(home, "var", "log", "splunk")
        os.makedirs(directory, exist_ok=True)
        handler = RotatingFileHandler(
            os.path.join(directory, LOG_FILE), maxBytes=25_000_000, backupCount=5, encoding="utf-8"
        )
    else:
        handler = logging.StreamHandler(sys.stderr)
    configure(level, handler=handler, static_fields={"input": input_name})


def validate_input(definition: Any) -> None:
    """External validation of a create or edit: the fields, and that the account exists."""
    meta: Dict[str, str] = definition.metadata
    params: Dict[str, Any] = definition.parameters
    state = InputState(meta["server_uri"], meta["session_key"], scope_of(meta["name"], params))
    settings_for(params, _PLACEHOLDER, meta["checkpoint_dir"], state)  # raises naming each field
    SplunkdSettings(meta["server_uri"], meta["session_key"]).account(str(params.get("account") or ""))


def stream_events(inputs: Any, ew: EventWriter) -> None:
    meta: Dict[str, str] = inputs.metadata
    stop.install()  # splunkd's SIGTERM (input disabled, shutdown): nothing new starts
    for stanza_name, stanza in inputs.inputs.items():
        name = stanza_name.split("://", 1)[-1]
        try:
            run_input(meta, stanza_name, name, stanza, ew)
        except Exception as exc:  # one broken input must not hide the others' messages
            # A settings or forwarder error is a message the admin can act on: no traceback.
            expected = isinstance(exc, (SettingsError, ForwarderError, ValueError))
            log.error("input failed", exc_info=not expected, extra={"error": str(exc)})
            ew.log(EventWriter.ERROR, f"{SCHEME} input {quoted(name)} failed: {exc}")


def run_input(
    meta: Dict[str, str], stanza_name: str, name: str, stanza: Dict[str, Any], ew: EventWriter
) -> None:
    splunkd = SplunkdSettings(meta["server_uri"], meta["session_key"])
    configure_logging(splunkd.log_level(), name)
    account = splunkd.account(str(stanza.get("account") or ""))
    proxy = splunkd.proxy_url()
    state = InputState(meta["server_uri"], meta["session_key"], scope_of(name, stanza))
    quarantine = os.path.join(meta["checkpoint_dir"], quote(state.scope, safe=""), "quarantine")
    settings = settings_for(stanza, account, quarantine, state, proxy)
    store = state.open(partition=tenant_of(settings))
    sourcetype = sourcetype_for(settings.format)
    sink = EventWriterSink(ew, stanza_name, stanza.get("index"), sourcetype)
    # The run's health event (FORWARDER_HEALTH_EVENTS) in the input's format, its own sourcetype.
    health = EventWriterSink(ew, stanza_name, stanza.get("index"), f"{sourcetype}:health")
    # The one place a run starts: stop/signal handling (should_stop) is wired here.
    report = run_once(settings, store=store, sink=sink, runtime="splunk", tenant=name, health_sink=health)
    if not report.ok:
        ew.log(
            EventWriter.ERROR, f"{SCHEME} input {quoted(name)}: run finished with errors: {_errors(report)}"
        )


def _errors(report: Any) -> str:
    found: List[str] = [report.error] if report.error else []
    found += report.failure_lines()
    return "; ".join(found)[:1000]
