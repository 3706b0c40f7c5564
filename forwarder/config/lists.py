"""Comma-list kinds of setting: choices, user emails, domains, action filters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Tuple

import idna

from ..domains import to_unicode_domain
from ..kinds import Problems
from ..logs import clip, quoted


def _split(value: str) -> List[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


@dataclass(frozen=True)
class Choices:
    """A comma list of ``options`` (lower case), at least one."""

    options: Tuple[str, ...]

    def parse(self, text: str) -> Tuple[str, ...]:
        chosen = tuple(t.lower() for t in _split(text))
        bad = [t for t in chosen if t not in self.options]
        if bad or not chosen:
            raise ValueError(
                f"choose from {', '.join(self.options)} (got {clip(', '.join(bad)) or 'nothing'})"
            )
        return chosen

    def describe(self) -> str:
        return "comma list of " + ", ".join(f"`{o}`" for o in self.options)


_EMAIL = re.compile(r"^[^@\s,]+@[^@\s,]+$")


@dataclass(frozen=True)
class Emails:
    def parse(self, text: str) -> Tuple[str, ...]:
        users = tuple(_split(text))
        bad = [f"{quoted(u)} is not an email address" for u in users if not _EMAIL.match(u)]
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
                bad.append(f"{quoted(name)} is not a valid domain name ({clip(str(exc))})")
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
            f"{quoted(f)} is not a filterable_action prefix like user.login or domain."
            for f in filters
            if not _FILTER.match(f)
        ]
        for f in filters:
            broader = [g for g in filters if g != f and f.startswith(g)]
            if broader:
                bad.append(
                    f"{quoted(f)} is already covered by {quoted(broader[0])} "
                    "(overlapping filters would fetch records twice)"
                )
        if bad:
            raise Problems(bad)
        return filters

    def describe(self) -> str:
        return "comma list of prefixes"


# The comma-list kinds: a tenants document may give their values as JSON lists.
LISTS = (Choices, Emails, Domains, Filters)
