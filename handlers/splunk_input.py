"""The forwarder as a Splunk modular input (splunklib's protocol: ``--scheme``, ``--validate-arguments``,
streaming). Splunk runs one process per input stanza at its ``interval``; each run is one ``run_once``.

* Settings: the stanza's fields become FORWARDER_* variables for ``load_settings``. The client secret
  is never in a .conf file: it lives in ``storage/passwords`` (realm = the app id, user = the client
  id), read over splunkd's REST API with the session key splunkd hands the script.
* Events: written through splunklib's EventWriter as the ECS JSON, time from the event. After each
  run one health event (the run report, sourcetype ``emailauth:audit:health``) feeds the dashboard.
* State: ``<checkpoint_dir>/<input name>/state`` through ``LocalStore`` (atomic writes, lease).
  A new input must not inherit the state of a deleted one of the same name: validation of an input
  that splunkd does not know yet (a create) retires any old directory, and every run compares the
  tenant (API URL, client id) with the one the directory was started for.
* Logs: JSON lines in ``$SPLUNK_HOME/var/log/splunk/ta_fortra_emailauth.log`` (indexed into
  ``_internal``), secrets masked; failures also go to stderr, which splunkd keeps in splunkd.log.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from logging.handlers import RotatingFileHandler
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence
from urllib.parse import quote, urlsplit

from splunklib import binding, client
from splunklib.modularinput import Argument, EventWriter, Scheme, Script
from splunklib.modularinput import Event as SplunkEvent

from forwarder import jsonutil
from forwarder.app import run_once
from forwarder.config import VARIABLES, Settings, load_settings
from forwarder.errors import ConfigError
from forwarder.events import Event, SendResult
from forwarder.logs import configure, register_secrets
from forwarder.sinks.base import DEFAULT_MAX_BYTES, DEFAULT_MAX_EVENTS
from forwarder.sinks.hec import hec_time
from forwarder.state.local import LocalStore, write_atomic

APP = "TA-fortra-emailauth"
SCHEME = "emailauth_audit"
SOURCETYPE = "emailauth:audit"
HEALTH_SOURCETYPE = "emailauth:audit:health"
LOG_FILE = "ta_fortra_emailauth.log"
_IDENTITY = "identity.json"
_PLACEHOLDER_SECRET = "placeholder-for-validation"  # lets validation check the other fields

log = logging.getLogger("ta_fortra_emailauth")


class Field(NamedTuple):
    name: str  # the inputs.conf key
    variable: str  # the FORWARDER_* variable it feeds
    title: str
    required: bool = False


FIELDS = (
    Field("api_url", "FORWARDER_API_URL", "API URL", required=True),
    Field("client_id", "FORWARDER_CLIENT_ID", "Client ID", required=True),
    Field("object_types", "FORWARDER_OBJECT_TYPES", "Object types"),
    Field("users", "FORWARDER_USERS", "Users"),
    Field("domains", "FORWARDER_DOMAINS", "Domains"),
    Field("filters", "FORWARDER_FILTERS", "Filters"),
    Field("initial_lookback", "FORWARDER_INITIAL_LOOKBACK", "Initial look-back"),
    Field("log_level", "FORWARDER_LOG_LEVEL", "Log level"),
)
_HELP = {v.name: v.help + (f" (default {v.default})" if v.default else "") for v in VARIABLES}


def scheme() -> Scheme:
    s = Scheme("EmailAuth audit trail")
    s.description = "Pulls the EmailAuth platform's audit trail as ECS JSON (sourcetype emailauth:audit)."
    s.use_external_validation = True
    s.use_single_instance = False  # one process per input, each on its own interval
    for f in FIELDS:
        s.add_argument(
            Argument(f.name, title=f.title, description=_HELP[f.variable], required_on_create=f.required)
        )
    return s


def settings_for(stanza: Mapping[str, Any], secret: str, directory: str) -> Settings:
    """Settings from an input's fields; ConfigError problems name the input's fields, not variables."""
    env = {f.variable: str(stanza.get(f.name) or "") for f in FIELDS}
    env.update(
        FORWARDER_CLIENT_SECRET=secret,
        FORWARDER_STATE=os.path.join(directory, "state"),
        FORWARDER_QUARANTINE=os.path.join(directory, "quarantine"),
        FORWARDER_FORMAT="ecs",
    )
    try:
        return load_settings(env)
    except ConfigError as exc:
        names = {f.variable: f.name for f in FIELDS}
        problems = []
        for problem in exc.problems:
            variable, _, rest = problem.partition(":")
            problems.append(f"{names[variable]}:{rest}" if variable in names else problem)
        raise ConfigError(problems) from None


def state_directory(checkpoint_dir: str, input_name: str) -> str:
    return os.path.join(checkpoint_dir, quote(input_name, safe="").replace(".", "%2E", 1))


def retire(directory: str, why: str) -> None:
    """Move an input's old state aside (kept for troubleshooting), so the input starts afresh."""
    if not os.path.isdir(directory):
        return
    target = f"{directory}.retired-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    os.replace(directory, target)
    log.warning("old state retired", extra={"reason": why, "moved_to": target})


def claim(directory: str, settings: Settings) -> None:
    """Tie the directory to the tenant it holds state for; another tenant's state is retired first."""
    tenant = {"api_url": settings.api_url, "client_id": settings.client_id}
    path = os.path.join(directory, _IDENTITY)
    try:
        with open(path, "rb") as f:
            stored = jsonutil.loads(f.read())
    except FileNotFoundError:
        stored = None
    except ValueError:
        stored = {}  # unreadable: cannot prove it is ours
    if stored == tenant:
        return
    if stored is not None:
        retire(directory, "the input now points at another API URL or client id")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    write_atomic(path, jsonutil.dumps(tenant))


class Splunkd:
    """The few splunkd REST calls the input makes, with the session key splunkd passed in."""

    def __init__(self, server_uri: str, session_key: str) -> None:
        parts = urlsplit(server_uri)
        self._service = client.Service(
            scheme=parts.scheme,
            host=parts.hostname,
            port=parts.port,
            token=session_key,
            owner="nobody",
            app=APP,
        )

    def client_secret(self, client_id: str) -> Optional[str]:
        """The secret stored (by the setup page) for ``client_id`` in this app's realm."""
        reply = self._service.get("storage/passwords", output_mode="json", count=0)
        for entry in jsonutil.loads(reply.body.read()).get("entry", []):
            content = entry.get("content", {})
            if content.get("realm") == APP and content.get("username") == client_id:
                secret = content.get("clear_password")
                return str(secret) if secret else None
        return None

    def input_exists(self, name: str) -> bool:
        try:
            self._service.get(f"data/inputs/{SCHEME}/{quote(name, safe='')}", output_mode="json")
        except binding.HTTPError as exc:
            if exc.status == 404:
                return False
            raise
        return True


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


class AuditInput(Script):
    def get_scheme(self) -> Scheme:
        return scheme()

    def validate_input(self, definition: Any) -> None:
        meta: Dict[str, str] = definition.metadata
        params: Dict[str, Any] = definition.parameters
        settings_for(params, _PLACEHOLDER_SECRET, meta["checkpoint_dir"])  # raises naming each field
        splunkd = Splunkd(meta["server_uri"], meta["session_key"])
        client_id = str(params.get("client_id") or "").strip()
        if not splunkd.client_secret(client_id):
            raise ValueError(
                f"no client secret is stored for client id {client_id!r}: "
                f"enter it on the {APP} setup page first (Apps > Manage Apps > Set up)"
            )
        if not splunkd.input_exists(meta["name"]):
            retire(state_directory(meta["checkpoint_dir"], meta["name"]), "a new input took this name")

    def stream_events(self, inputs: Any, ew: EventWriter) -> None:
        meta: Dict[str, str] = inputs.metadata
        for stanza_name, stanza in inputs.inputs.items():
            name = stanza_name.split("://", 1)[-1]
            configure_logging(str(stanza.get("log_level") or "INFO").upper(), name)
            try:
                self._run(meta, stanza_name, name, stanza, ew)
            except Exception as exc:  # one broken input must not hide the others' messages
                log.exception("input failed", extra={"error": str(exc)})
                ew.log(EventWriter.ERROR, f"{SCHEME} input {name!r} failed: {exc}")

    def _run(
        self, meta: Dict[str, str], stanza_name: str, name: str, stanza: Dict[str, Any], ew: EventWriter
    ) -> None:
        client_id = str(stanza.get("client_id") or "").strip()
        secret = Splunkd(meta["server_uri"], meta["session_key"]).client_secret(client_id)
        if not secret:
            raise ValueError(f"no client secret stored for client id {client_id!r} (use the setup page)")
        register_secrets([secret])
        directory = state_directory(meta["checkpoint_dir"], name)
        settings = settings_for(stanza, secret, directory)
        claim(directory, settings)
        sink = EventWriterSink(
            ew, stanza_name, stanza.get("index"), str(stanza.get("sourcetype") or SOURCETYPE)
        )
        report = run_once(settings, store=LocalStore(settings.state), sink=sink)
        health = {"input": name, **report.to_dict()}
        sink.write(jsonutil.dumps(health).decode("utf-8"), int(time.time() * 1_000_000), HEALTH_SOURCETYPE)
        if not report.ok:
            ew.log(EventWriter.ERROR, f"{SCHEME} input {name!r}: run finished with errors: {_errors(report)}")


def _errors(report: Any) -> str:
    found: List[str] = [report.error] if report.error else []
    found += [f"{s.stream}: {s.error}" for s in report.streams if s.error]
    return "; ".join(found)[:1000]


def main(argv: Sequence[str]) -> int:
    return int(AuditInput().run(list(argv)))
