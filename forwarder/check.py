"""`audit-forwarder check`: prove the configuration works end to end without shipping anything."""

from __future__ import annotations

from typing import TextIO

from .api.paging import PageOutcome
from .app import build_client, plan
from .config import Settings
from .errors import ForwarderError
from .logs import redact, register_secrets
from .records import InvalidRecord, parse_record
from .sinks import open_sink
from .state import open_store
from .timeutil import format_us


def check(settings: Settings, out: TextIO) -> bool:
    """Print one line per step; return whether every step passed."""

    register_secrets(settings.secrets())

    def say(ok: bool, what: str) -> bool:
        out.write(redact(f"{'ok  ' if ok else 'FAIL'} {what}\n"))
        return ok

    say(True, f"configuration: {settings.api_url}, format {settings.format}, sink {settings.sink.uri}")
    try:
        store = open_store(settings.state)
        say(True, f"state: {store.location} ({len(store.keys())} streams stored)")
        sink = open_sink(settings.sink)
        sink.close()
        say(True, f"sink: {settings.sink.uri} (configuration accepted; nothing sent)")
    except (ForwarderError, ValueError) as exc:
        return say(False, f"state/sink: {exc}")

    client = build_client(settings)
    try:
        client.authenticate()
        say(True, "token: obtained")
        streams = plan(settings, client)
        say(True, f"streams: {len(streams)} planned")
        if not streams:
            return say(False, "streams: nothing to pull (set FORWARDER_USERS or FORWARDER_DOMAINS)")
        first = streams[0]
        outcome = PageOutcome()
        page = next(
            iter(
                client.audits(
                    first.object_type, first.name, first.filter, None, settings.page_limit, 1, outcome
                )
            ),
            [],
        )
        times = []
        for raw in page:
            try:
                times.append(parse_record(raw, first.object_type).ts_us)
            except InvalidRecord as exc:
                return say(False, f"audits {first.key}: {exc}")
        newest = f", newest {format_us(max(times))}" if times else ""
        return say(True, f"audits {first.key}: {len(page)} records on the first page{newest}")
    except ForwarderError as exc:
        return say(False, str(exc))
    finally:
        client.close()
