"""Exception types, and the one line that describes any exception. Messages name what was wrong and
never carry a secret."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Sequence, Union

_NAMED = re.compile(r"([^\s:]+): (.*)", re.DOTALL)  # "FORWARDER_X: ...", "hec_index: ...", "--tenant: ..."


class ForwarderError(Exception):
    """Base class for every error the forwarder raises on purpose."""


class StreamFailed(ForwarderError):
    """A stream cannot go on this run; the state stays where it was."""


@dataclass(frozen=True)
class Problem:
    """One configuration problem: the setting to fix, named as whoever set it names it (a variable,
    a tenant document's field, a Splunk input's field; "" when the text names none), and what is
    wrong with it. Its text is ``<variable>: <message>``."""

    variable: str
    message: str

    @classmethod
    def parse(cls, text: str) -> Problem:
        """The problem a ``<variable>: <message>`` text tells; one naming no setting otherwise."""
        named = _NAMED.fullmatch(text)
        return cls(named.group(1), named.group(2)) if named else cls("", text)

    def __str__(self) -> str:
        return f"{self.variable}: {self.message}" if self.variable else self.message


class ConfigError(ForwarderError):
    """One or more configuration problems, each naming its variable: ``structured`` holds them as
    ``Problem``s, ``problems`` as their texts."""

    def __init__(self, problems: Sequence[Union[str, Problem]]) -> None:
        self.structured: List[Problem] = [p if isinstance(p, Problem) else Problem.parse(p) for p in problems]
        self.problems = [str(p) for p in self.structured]
        super().__init__("invalid configuration:\n  - " + "\n  - ".join(self.problems))


class ApiError(ForwarderError):
    """The platform API refused a request or answered something unusable."""

    def __init__(self, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class AuthError(ApiError):
    """The token endpoint refused the credentials, or a fresh token was refused too."""


class MalformedResponse(ApiError):
    """The API answered 2xx with a body that is not the expected shape."""


class StateError(ForwarderError):
    """A state document could not be read, parsed or written."""


class ConflictError(StateError):
    """A compare-and-swap lost a race: another writer changed the state first."""


class LeaseHeld(StateError):
    """Another run holds the lease and it has not expired."""


class SinkError(ForwarderError):
    """The sink did not durably accept a batch."""

    def __init__(self, message: str, retryable: bool = False) -> None:
        self.retryable = retryable
        super().__init__(message)


def describe(exc: BaseException) -> str:
    """One line about ``exc``: our own errors say what was wrong; anything else names its type."""
    if isinstance(exc, ConfigError):
        return "; ".join(exc.problems)
    if isinstance(exc, ForwarderError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
