"""The kinds of value a setting holds. Each kind parses a variable's text (already stripped, default
applied) into its value, raises ValueError (or ``Problems`` for several) with a message that does not
name the variable (the reader adds the name), and describes itself for the README. Single values and
URLs here, below the plugins that declare their settings with them; lists in ``config.lists``, the
other places (locations, headers, the sink URI) in ``config.places``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Sequence, Tuple

from .logs import quoted
from .timeutil import parse_duration
from .urls import url_problem


class Kind(Protocol):
    def parse(self, text: str) -> Any: ...

    def describe(self) -> str: ...


class Problems(ValueError):
    """Several problems with one variable's value (one per bad list item, say)."""

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = list(messages)
        super().__init__("; ".join(self.messages))


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
        raise ValueError(f"expected true or false, got {quoted(value)}")

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
            raise ValueError(f"expected a whole number, got {quoted(text)}") from None
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
    optional: bool = False  # empty is None (the consumer's own default)

    def parse(self, text: str) -> Optional[int]:
        if self.optional and not text:
            return None
        value = parse_duration(text)
        if self.maximum_s is not None and value > self.maximum_s:
            raise ValueError(f"at most {self.maximum_s // 86400} days (got {quoted(text)})")
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
            raise ValueError(f"expected a positive number of requests per second, got {quoted(text)}")
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
            raise ValueError(f"choose from {', '.join(self.options)} (got {quoted(value)})")
        return value

    def describe(self) -> str:
        return "one of " + ", ".join(f"`{o}`" for o in self.options)


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


def secret_reference(text: str) -> Optional[str]:
    """What is wrong with ``text`` as a ``secretsmanager:`` / ``ssm:`` reference (a ``Text`` check)."""
    if re.match(r"^(secretsmanager|ssm):.+", text):
        return None
    return "expected secretsmanager:<secret id> or ssm:<parameter name>"
