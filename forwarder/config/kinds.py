"""The kinds of value a setting holds. Each kind parses a variable's text (already stripped, default
applied) into its value, raises ValueError (or ``Problems`` for several) with a message that does not
name the variable (the reader adds the name), and describes itself for the README."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import idna

from ..http_headers import parse_headers
from ..sinks import scheme_of
from ..sinks import schemes as sink_schemes
from ..state import location_problem
from ..timeutil import parse_duration
from ..urls import redact_url, secret_in_url, url_problem


class Problems(ValueError):
    """Several problems with one variable's value (one per bad list item, say)."""

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = list(messages)
        super().__init__("; ".join(self.messages))


def _split(value: str) -> List[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def to_unicode_domain(name: str) -> str:
    """IDNA/UTS-46 to the Unicode form the API wants, lowercased: xn--bcher-kva.example -> bücher.example."""
    text = name.strip().rstrip(".")
    if not text:
        raise ValueError("empty domain name")
    return str(idna.decode(text, uts46=True)).lower()


@dataclass(frozen=True)
class Text:
    """Free text; empty is None unless ``required`` (the message then). ``check`` returns what is wrong
    with a value, if anything."""

    check: Optional[Callable[[str], Optional[str]]] = None
    shown: str = "text"
    required: Optional[str] = None

    def parse(self, text: str) -> Any:
        if not text and self.required:
            raise ValueError(self.required)
        problem = self.check(text) if text and self.check else None
        if problem:
            raise ValueError(problem)
        return text or None

    def describe(self) -> str:
        return self.shown


@dataclass(frozen=True)
class Flag:
    def parse(self, text: str) -> bool:
        value = text.lower()
        if value in ("1", "true", "yes", "on"):
            return True
        if value in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"expected true or false, got {value!r}")

    def describe(self) -> str:
        return "true/false"


@dataclass(frozen=True)
class Integer:
    """A whole number in ``[minimum, maximum]``; empty is None (the consumer's own default)."""

    minimum: int
    maximum: Optional[int] = None
    unit: str = ""

    def parse(self, text: str) -> Optional[int]:
        if not text:
            return None
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"expected a whole number, got {text!r}") from None
        if value < self.minimum or (self.maximum is not None and value > self.maximum):
            upper = f" and {self.maximum}" if self.maximum is not None else ""
            raise ValueError(f"must be between {self.minimum}{upper}, got {value}")
        return value

    def describe(self) -> str:
        upper = f" to {self.maximum}" if self.maximum is not None else " or more"
        return f"{self.unit or 'whole number'}, {self.minimum}{upper}"


@dataclass(frozen=True)
class Seconds(Integer):
    """Whole seconds, held as a float as the HTTP calls take them."""

    def parse(self, text: str) -> Optional[float]:  # type: ignore[override]
        value = super().parse(text)
        return None if value is None else float(value)


@dataclass(frozen=True)
class Duration:
    """``30s``, ``90m``, ``1h``, ``14d``, ``13mo``, ``1y`` as seconds, at most ``maximum_s``."""

    maximum_s: Optional[int] = None

    def parse(self, text: str) -> int:
        value = parse_duration(text)
        if self.maximum_s is not None and value > self.maximum_s:
            raise ValueError(f"at most {self.maximum_s // 86400} days (got {text!r})")
        return value

    def describe(self) -> str:
        years = f", at most {self.maximum_s // (366 * 86400)} years" if self.maximum_s else ""
        return f"duration{years}"


@dataclass(frozen=True)
class Rate:
    """Requests per second, a positive number; empty is None (unlimited)."""

    def parse(self, text: str) -> Optional[float]:
        if not text:
            return None
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not 0 < value < float("inf"):
            raise ValueError(f"expected a positive number of requests per second, got {text!r}")
        return value

    def describe(self) -> str:
        return "number > 0"


@dataclass(frozen=True)
class Choice:
    """One of ``options``, compared in lower (or upper) case; ``optional`` lets it be empty."""

    options: Tuple[str, ...]
    upper: bool = False
    optional: bool = False

    def parse(self, text: str) -> str:
        value = text.upper() if self.upper else text.lower()
        if value not in self.options and not (self.optional and not value):
            raise ValueError(f"choose from {', '.join(self.options)} (got {value!r})")
        return value

    def describe(self) -> str:
        return "one of " + ", ".join(f"`{o}`" for o in self.options)


@dataclass(frozen=True)
class Choices:
    """A comma list of ``options`` (lower case), at least one."""

    options: Tuple[str, ...]

    def parse(self, text: str) -> Tuple[str, ...]:
        chosen = tuple(t.lower() for t in _split(text))
        bad = [t for t in chosen if t not in self.options]
        if bad or not chosen:
            raise ValueError(f"choose from {', '.join(self.options)} (got {', '.join(bad) or 'nothing'})")
        return chosen

    def describe(self) -> str:
        return "comma list of " + ", ".join(f"`{o}`" for o in self.options)


_EMAIL = re.compile(r"^[^@\s,]+@[^@\s,]+$")


@dataclass(frozen=True)
class Emails:
    def parse(self, text: str) -> Tuple[str, ...]:
        users = tuple(_split(text))
        bad = [f"{u!r} is not an email address" for u in users if not _EMAIL.match(u)]
        if bad:
            raise Problems(bad)
        return users

    def describe(self) -> str:
        return "comma list of emails"


@dataclass(frozen=True)
class Domains:
    """Domains in any form, to their Unicode form, each once."""

    def parse(self, text: str) -> Tuple[str, ...]:
        domains, bad = [], []
        for name in _split(text):
            try:
                domains.append(to_unicode_domain(name))
            except (idna.IDNAError, UnicodeError, ValueError) as exc:
                bad.append(f"{name!r} is not a valid domain name ({exc})")
        if bad:
            raise Problems(bad)
        return tuple(dict.fromkeys(domains))

    def describe(self) -> str:
        return "comma list of domains"


_FILTER = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]*)*$")


@dataclass(frozen=True)
class Filters:
    """``filterable_action`` prefixes, none covering another (that would fetch records twice)."""

    def parse(self, text: str) -> Tuple[str, ...]:
        filters = tuple(_split(text))
        bad = [
            f"{f!r} is not a filterable_action prefix like user.login or domain."
            for f in filters
            if not _FILTER.match(f)
        ]
        for f in filters:
            broader = [g for g in filters if g != f and f.startswith(g)]
            if broader:
                bad.append(
                    f"{f!r} is already covered by {broader[0]!r} "
                    "(overlapping filters would fetch records twice)"
                )
        if bad:
            raise Problems(bad)
        return filters

    def describe(self) -> str:
        return "comma list of prefixes"


@dataclass(frozen=True)
class Url:
    """An https URL (http for loopback) without a secret in it, trailing ``/`` dropped; required."""

    def parse(self, text: str) -> str:
        url = text.rstrip("/")
        problem = url_problem(url) if url else "required (e.g. https://api.example.com)"
        if problem:
            raise ValueError(problem)
        return url

    def describe(self) -> str:
        return "URL"


@dataclass(frozen=True)
class SinkUri:
    """A FORWARDER_SINK value: a scheme the sink registry knows, no secret in the URI. The sink's own
    rules run later, over every sink setting (``sinks.sink_problems``)."""

    def parse(self, text: str) -> str:
        if scheme_of(text) not in sink_schemes():
            shown = redact_url(text)
            raise ValueError(f"{shown!r} is not supported (schemes: {', '.join(sink_schemes())})")
        problem = secret_in_url(text)
        if problem:
            raise ValueError(problem)
        return text

    def describe(self) -> str:
        return "URI"


@dataclass(frozen=True)
class Location:
    """Where something is kept: a path or URI, with no secret in it; ``state`` adds the state store's
    rules (a scheme it can open)."""

    state: bool = False

    def parse(self, text: str) -> str:
        problems = [secret_in_url(text), location_problem(text) if self.state else None]
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
