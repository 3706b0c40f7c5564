"""When to colour, and how: ANSI colours only on a terminal that supports them, never with NO_COLOR."""

from __future__ import annotations

from typing import Mapping, TextIO

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33"}


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def wants_colour(stream: TextIO, env: Mapping[str, str]) -> bool:
    """A terminal whose TERM is known and not ``dumb``, and no NO_COLOR in the environment: any value,
    even empty, turns colour off (https://no-color.org)."""
    return is_terminal(stream) and env.get("TERM", "dumb") != "dumb" and "NO_COLOR" not in env


class Style:
    """Wraps text in ANSI colour codes, or leaves it alone when colour is off."""

    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def paint(self, text: str, *names: str) -> str:
        if not self.colour or not names or not text:
            return text
        codes = ";".join(_CODES[name] for name in names)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def ok(self, text: str) -> str:
        return self.paint(text, "green")

    def warn(self, text: str) -> str:
        return self.paint(text, "yellow")

    def bad(self, text: str) -> str:
        return self.paint(text, "red", "bold")

    def head(self, text: str) -> str:
        return self.paint(text, "bold")
