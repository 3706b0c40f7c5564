"""`audit-forwarder check`: prove the configuration works end to end without shipping anything."""

from __future__ import annotations

from typing import TextIO

from .api.orgwide import probe_org_wide
from .app import build_client, plan
from .config import Settings
from .errors import ForwarderError
from .logs import redact, register_secrets
from .reading.probe import probe
from .retry import REAL_TIME, Pace
from .sinks import probe_sink
from .state import open_store_for
from .timeutil import now_us


def check(settings: Settings, out: TextIO, *, pace: Pace = REAL_TIME) -> bool:
    """Print one line per step; return whether every step passed. Whatever tries again waits at ``pace``."""

    register_secrets(settings.secrets())

    def say(ok: bool, what: str) -> bool:
        out.write(redact(f"{'ok  ' if ok else 'FAIL'} {what}\n"))
        return ok

    say(True, f"configuration: {settings.api_url}, format {settings.format}, sink {settings.sink.uri}")
    for notice in settings.notices:
        out.write(redact(f"warn configuration: {notice}\n"))
    try:
        store = open_store_for(settings)
        say(True, f"state: {store.location} ({len(store.keys())} streams stored)")
    except (ForwarderError, ValueError) as exc:
        return say(False, f"state: {exc}")
    try:  # a sink that fails its probe still lets the API steps be checked
        sink_ok = say(True, f"sink: {probe_sink(settings.sink, pace=pace)}; nothing sent")
    except (ForwarderError, ValueError) as exc:
        sink_ok = say(False, f"sink: {exc}")

    client = build_client(settings, pace=pace)
    step = "token"  # the step a failure is named by
    try:
        client.authenticate()
        say(True, "token: obtained")
        step = "streams"
        streams = plan(settings, client)
        say(True, f"streams: {len(streams)} planned")
        if not streams:
            return say(False, "streams: nothing to pull (set FORWARDER_USERS or FORWARDER_DOMAINS)")
        step = "audits"
        findings = probe(client, streams, page_limit=settings.page_limit)
        if findings is None:
            say(True, f"audits: the first streams hold no records yet ({streams[0].key}, ...)")
        else:
            for line in findings.lines():
                say(True, line)
        since_us = now_us() - settings.initial_lookback_s * 1_000_000
        for object_type in settings.object_types:
            found = probe_org_wide(
                client, object_type, streams, since_us=since_us, page_limit=settings.page_limit
            )
            say(True, found.line())
        return sink_ok
    except ForwarderError as exc:
        return say(False, f"{step}: {exc}")
    finally:
        client.close()
