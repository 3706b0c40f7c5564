"""The check each transport module makes at import: every private hook it overrides or reads is there."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Iterable, List, Optional, Tuple

from ..errors import ForwarderError

# What a user can do about a library outside the versions the hooks were checked against.
BOUNDS = "pyproject.toml's bounds: requests>=2.28,<3, urllib3>=1.26,<3, botocore>=1.31,<2, PySocks>=1.7,<2"


class UnsupportedLibrary(ForwarderError):
    """An installed HTTP library lacks a hook the deadline watchdog needs (a version out of bounds)."""


@dataclass(frozen=True)
class Hook:
    """``owner.name``: a method (or attribute) of a class, or an attribute a made instance holds.
    ``params``: the parameters without a default the override takes and passes on, in order (None:
    the override passes everything on as it came, so any parameters do). ``same``: the object the
    attribute must be (a table written through another attribute reaches it only then)."""

    owner: Any
    name: str
    params: Optional[Tuple[str, ...]] = None
    same: Any = field(default=None, compare=False)

    def where(self) -> str:
        if isinstance(self.owner, ModuleType):
            return f"{self.owner.__name__}.{self.name}"
        owner = self.owner if isinstance(self.owner, type) else type(self.owner)
        return f"{owner.__module__}.{owner.__qualname__}.{self.name}"

    def problem(self) -> Optional[str]:
        """What is wrong with the hook in the installed library, None if nothing."""
        found = getattr(self.owner, self.name, _MISSING)
        if found is _MISSING:
            return f"{self.where()} is missing"
        if self.same is not None and found is not self.same:
            return f"{self.where()} is no longer the table the forwarder writes"
        if self.params is None:
            return None
        if not callable(found):
            return f"{self.where()} is not callable"
        required = _required(found)
        if required is not None and required != self.params:
            return f"{self.where()} takes ({', '.join(required)}), not ({', '.join(self.params)})"
        return None


_MISSING = object()


def _required(function: Any) -> Optional[Tuple[str, ...]]:
    """The names of ``function``'s positional parameters without a default (None: not inspectable)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: only its presence is checked
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in signature.parameters.values() if p.kind in kinds and p.default is p.empty)


def problems(hooks: Iterable[Hook]) -> List[str]:
    return [problem for problem in (hook.problem() for hook in hooks) if problem]


def require(hooks: Iterable[Hook], library: str, version: str) -> None:
    """Raise UnsupportedLibrary naming ``library`` ``version`` and every hook it lacks, if any."""
    found = problems(hooks)
    if found:
        raise UnsupportedLibrary(
            f"{library} {version} is not a version the forwarder's deadline watchdog supports "
            f"({'; '.join(found)}): install one within {BOUNDS}"
        )
