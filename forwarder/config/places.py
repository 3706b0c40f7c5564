"""Kinds of setting that say where to connect or keep things: the sink URI, a state or quarantine
location, and the sink's extra HTTP headers (URLs are ``forwarder.kinds.Url``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional

from ..http_headers import parse_headers
from ..kinds import Problems
from ..logs import quoted
from ..sinks import scheme_of
from ..sinks import schemes as sink_schemes
from ..urls import redact_url, secret_in_url


@dataclass(frozen=True)
class SinkUri:
    """A FORWARDER_SINK value: a scheme the sink registry knows, no secret in the URI. The sink's own
    rules run later, over every sink setting (``sinks.sink_problems``)."""

    def parse(self, text: str) -> str:
        known = scheme_of(text) in sink_schemes()
        if not known and "://" not in text:
            # `host:port` parses as a scheme `host` and a path: quote it as written (no user-info),
            # with the fix
            bare = text.split("?")[0].rpartition("@")[2][:200]
            raise ValueError(
                f"{bare!r} has no scheme: write the kind of sink before it, e.g. hec+https://{bare} "
                f"for Splunk HEC (schemes: {', '.join(sink_schemes())})"
            )
        if not known:
            shown = redact_url(text)
            raise ValueError(f"{quoted(shown)} is not supported (schemes: {', '.join(sink_schemes())})")
        problem = secret_in_url(text)
        if problem:
            raise ValueError(problem)
        return text

    def describe(self) -> str:
        return "URI"


@dataclass(frozen=True)
class Location:
    """Where something is kept: a path or URI, with no secret in it, that ``problem`` (the state
    store's or the quarantine's rules) finds usable: a scheme it opens, naming what it needs."""

    problem: Callable[[str], Optional[str]]

    def parse(self, text: str) -> str:
        problems = [secret_in_url(text), self.problem(text)]
        found = [p for p in problems if p]
        if found:
            raise Problems(found)
        return text

    def describe(self) -> str:
        return "path or URI"


@dataclass(frozen=True)
class Headers:
    def parse(self, text: str) -> Dict[str, str]:
        return parse_headers(text) if text else {}

    def describe(self) -> str:
        return "`Name: value; ...`"
