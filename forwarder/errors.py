"""Exception types, and the one line that describes any exception. Messages name what was wrong and
never carry a secret."""

from __future__ import annotations

from typing import Sequence


class ForwarderError(Exception):
    """Base class for every error the forwarder raises on purpose."""


class StreamFailed(ForwarderError):
    """A stream cannot go on this run; the state stays where it was."""


class ConfigError(ForwarderError):
    """One or more configuration problems, each naming its variable."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
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
