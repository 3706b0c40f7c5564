"""Serialized events with holes: the bytes of an event whose facts are cached, written once, with
the few values that differ per record (time, id, original text) filled in by position.

Most of a trail is change-less records (logins) whose facts are cached (``facts.py``): their events
differ only in what comes from the record itself. Writing those few values into cached bytes costs a
fraction of building and serializing the whole document, and gives the same bytes: a JSON value
serializes the same inside a document as alone (``jsonutil`` writes both).

A hole is a marker string holding a random per-process token, so no record can contain one (a value
may fill several holes); a template is only made when every marker occurs, else the caller renders
in full.
"""

from __future__ import annotations

import operator
import secrets
from typing import Any, Callable, Dict, Generic, List, NamedTuple, Optional, Sequence, Tuple, Type, TypeVar

from .. import jsonutil
from ..records import AuditRecord
from . import NormalizeOptions, new_tuple
from .facts import Facts, PlainKey, facts, plain_facts
from .plain import PlainCache

_TOKEN = secrets.token_hex(16)


def hole(n: int) -> str:
    """The marker to render in place of the ``n``-th varying value."""
    return f"\x00{_TOKEN}:{n}"


class Template(NamedTuple):
    """The event cut at its holes. ``pick`` takes ``parts`` followed by the serialized values and
    gives the pieces in document order, ready for one ``bytes.join``: both steps run in C, where
    ``bytes %`` would scan the whole event for its ``%``."""

    parts: Tuple[bytes, ...]  # the bytes around the holes: one more than the holes
    pick: Callable[[Sequence[bytes]], Tuple[bytes, ...]]  # parts + values -> pieces in document order

    def fill(self, values: Sequence[Any]) -> bytes:
        """The event's bytes with ``values[n]`` (any JSON value) where ``hole(n)`` was rendered."""
        return b"".join(self.pick(self.parts + jsonutil.dumps_each(values)))


def compile_template(body: bytes, holes: int) -> Optional[Template]:
    """The template of ``body``, an event serialized with ``hole(0)`` .. ``hole(holes - 1)`` in
    place of its varying values; None when some marker is missing."""
    found: List[Tuple[int, int, int]] = []  # (position, length, value number)
    for n in range(holes):
        marker = jsonutil.dumps(hole(n))
        at = body.find(marker)
        if at < 0:
            return None
        while at >= 0:
            found.append((at, len(marker), n))
            at = body.find(marker, at + len(marker))
    found.sort()
    parts: List[bytes] = []
    start = 0
    for at, length, _ in found:
        parts.append(body[start:at])
        start = at + length
    parts.append(body[start:])
    # parts[i], then the value of the i-th hole (at len(parts) + its number), ..., the last part
    order = [len(parts) + n for _, _, n in found]
    pieces = [index for i, value in enumerate(order) for index in (i, value)] + [len(parts) - 1]
    pick = operator.itemgetter(*pieces) if holes else lambda items: (items[0],)  # one index: no tuple
    return Template(tuple(parts), pick)


# A format's per-record values: a named tuple whose last field is the record's original text (None
# without include_original). ``own`` gives its fields as a plain tuple: the template's values need no
# names, and a named tuple costs a Python call to build.
OwnT = TypeVar("OwnT", bound=Tuple[Any, ...])


class Templated(Generic[OwnT]):
    """A JSON format that serializes ``render(facts, opts, own)``; events of records with cached facts
    are filled into a cached template instead."""

    def __init__(
        self,
        render: Callable[[Facts, NormalizeOptions, OwnT], Dict[str, Any]],
        own: Callable[[AuditRecord, NormalizeOptions], Tuple[Any, ...]],
        own_type: Type[OwnT],
    ) -> None:
        self._render, self._own, self._own_type = render, own, own_type
        self._templates: PlainCache[Optional[Template]] = PlainCache(self._compile, 4096)

    def body(self, record: AuditRecord, opts: NormalizeOptions) -> bytes:
        template = self._templates.get(record, opts)
        own = self._own(record, opts)
        if template:  # template.fill, inlined
            return b"".join(template.pick(template.parts + jsonutil.dumps_each(own)))
        return jsonutil.dumps(self._render(facts(record), opts, new_tuple(self._own_type, own)))

    def document(self, record: AuditRecord, opts: NormalizeOptions) -> Dict[str, Any]:
        return self._render(facts(record), opts, self._own_type(*self._own(record, opts)))

    def _compile(self, key: PlainKey, opts: NormalizeOptions) -> Optional[Template]:
        fields = len(self._own_type._fields)  # type: ignore[attr-defined]
        count = fields if opts.include_original else fields - 1
        holes = self._own_type(*(hole(n) for n in range(count)))
        return compile_template(jsonutil.dumps(self._render(plain_facts(key), opts, holes)), count)
