"""Bounded caches for what the normalizers derive from a record's strings.

A trail repeats its users, domains, actions, change keys and DMARC records, so deriving their forms
once pays. Every cache holds at most ``maxsize`` entries, and a call with a string argument longer
than ``MAX_TEXT`` (or a tuple of strings longer together) is computed, not cached: a hostile record
cannot pin megabytes in memory.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, Callable, Dict, TypeVar

MAX_TEXT = 1024  # an email address or a domain name is at most 254 characters

F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")
_TEXT_OR_NULL = frozenset({str, type(None)})


class Memo(Dict[Any, V]):
    """``fn``'s values by argument, looked up as ``memo[arg]``: a dict, so that a hit costs one
    subscript and no Python call, for the lookups every change record makes. Only a text, or a tuple
    of texts and nulls, at most ``MAX_TEXT`` long (together) is kept: other arguments are computed
    every time, so 1 and true never share an entry. At most ``maxsize`` entries, the oldest dropped
    first."""

    __slots__ = ("_fn", "_maxsize")

    def __init__(self, fn: Callable[[Any], V], maxsize: int) -> None:
        super().__init__()
        self._fn, self._maxsize = fn, maxsize

    def __missing__(self, key: Any) -> V:
        value = self._fn(key)
        kind = key.__class__
        if (kind is str and len(key) <= MAX_TEXT) or (
            kind is tuple
            and _TEXT_OR_NULL.issuperset(map(type, key))
            and sum(len(item) for item in key if item is not None) <= MAX_TEXT
        ):
            while len(self) >= self._maxsize:  # threads share it: each drops what it finds over
                # the oldest; another thread may have emptied or changed the dict meanwhile
                with contextlib.suppress(StopIteration, KeyError, RuntimeError):
                    del self[next(iter(self))]
            self[key] = value
        return value


def text_cache(maxsize: int) -> Callable[[F], F]:
    """Cache a function of texts, each at most ``MAX_TEXT`` long (a tuple's together). One of a single
    argument becomes the lookup of a ``Memo`` (``Memo.__getitem__``): a hit costs no Python call,
    and the function keeps no name of its own."""

    def decorate(fn: F) -> F:
        if len(inspect.signature(fn).parameters) == 1:  # most of them
            return Memo(fn, maxsize).__getitem__  # type: ignore[return-value]
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            for arg in args:
                kind = arg.__class__
                if (kind is str and len(arg) > MAX_TEXT) or (kind is tuple and sum(map(len, arg)) > MAX_TEXT):
                    return fn(*args)
            return cached(*args)

        return call  # type: ignore[return-value]

    return decorate
