"""Serialized events with holes: the bytes of an event whose facts are cached, written once, with
the few values that differ per record (time, id, original text) filled in by position.

Most of a trail is change-less records (logins) whose facts are cached (``facts.py``): their events
differ only in what comes from the record itself. Writing those few values into cached bytes costs a
fraction of building and serializing the whole document, and gives the same bytes: a JSON value
serializes the same inside a document as alone, and a text the same inside its quotes (``jsonutil``
writes both).

A hole is a marker string holding a random per-process token, so no record can contain one (a value
may fill several holes); a template is only made when every marker occurs, else the caller renders
in full.
"""

from __future__ import annotations

import functools
import secrets
from typing import (
    Any,
    Callable,
    Collection,
    Dict,
    List,
    Optional,
    Tuple,
)

from .. import jsonutil
from ..events import Event
from ..records import AuditRecord
from ..timeutil import format_us
from . import NormalizeOptions, new_tuple
from .facts import Facts, PlainKey, derive, facts, plain_facts
from .plain import PlainCache, TextCache, around_created_at

_TOKEN = secrets.token_hex(16)
_CACHE_SIZE = 4096  # templates per format; plain keys are short


def hole(n: int) -> str:
    """The marker to render in place of the ``n``-th varying value."""
    return f"\x00{_TOKEN}:{n}\x00"  # ended, so that no marker is the start of another


# The event cut at its holes, as the function filling them: ``template(*values)`` is the event's
# bytes with ``values[n]`` where ``hole(n)`` was rendered: the content of a JSON string for a text
# hole (``jsonutil.string_content``), else a whole JSON value.
Template = Callable[..., bytes]


def compile_template(body: bytes, holes: int, bare: Collection[int] = ()) -> Optional[Template]:
    """The template of ``body``, an event serialized with ``hole(0)`` .. ``hole(holes - 1)`` in
    place of its varying values; None when some marker is missing. A hole is a text hole (its
    quotes stay in the template, so a text needing no escapes is filled as it is) unless its number
    is in ``bare``: its value is then a whole JSON value (a number)."""
    found: List[Tuple[int, int, int]] = []  # (position, length, value number)
    for n in range(holes):
        marker = jsonutil.dumps(hole(n))
        if n not in bare:
            marker = marker[1:-1]
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
    return _joiner(tuple(n for _, _, n in found), holes)(*parts)


@functools.lru_cache(maxsize=64)  # a format renders its templates' holes in a handful of orders
def _joiner(order: Tuple[int, ...], holes: int) -> Callable[..., Template]:
    """For values filling holes in the document order ``order`` (their numbers, ``holes`` of them):
    a function of the parts around the holes giving the template, which joins parts and values by
    one ``bytes.join`` of a tuple its own code lists in document order. Written out and compiled
    once per order because picking the pieces out of parts and values (``operator.itemgetter``)
    costs ~115 instructions a piece, index objects converted and subscripts generic: an OCSF
    login's 13 pieces, ~1.5k instructions, where the function's own frame costs a few hundred."""
    parts = [f"p{i}" for i in range(len(order) + 1)]
    values = [f"v{n}" for n in range(holes)]
    pieces = [piece for part, n in zip(parts, order) for piece in (part, values[n])] + parts[-1:]
    source = f"lambda {', '.join(parts)}: lambda {', '.join(values)}: join(({', '.join(pieces)},))"
    return eval(source, {"join": b"".join})  # names made of numbers: nothing of a record


# What an event takes from the record itself rather than from its facts (ECS and OCSF alike), and
# its ingest time, which differs from one pass to the next: (time, event_id, created_at, ingest,
# original). The event's time is the canonical text (``format_us``) or epoch milliseconds; created_at
# as given; the ingest time (``NormalizeOptions.ingest_time_us``) in the same form as the time; the
# record's canonical text with include_original, else None. A plain tuple, which renderers unpack:
# a named one costs a Python-level allocation per change record, and its unpacking a slower path.
Own = Tuple[Any, str, str, Any, Optional[str]]


class Filler:
    """What the records of one plain key are filled into: their template, and whether their
    canonical text can be baked into it (``Templated._bake``; False once that failed: not retried)."""

    __slots__ = ("bakeable", "key", "template")

    def __init__(self, template: Template, key: PlainKey) -> None:
        self.template, self.key = template, key
        self.bakeable = True


class Templated:
    """A JSON format that serializes ``render(facts, opts, own)``; events of records with cached facts
    are filled into a cached template instead. ``time_in_ms``: the event's time is epoch
    milliseconds (OCSF), else the canonical text (ECS)."""

    def __init__(
        self, render: Callable[[Facts, NormalizeOptions, Own], Dict[str, Any]], time_in_ms: bool
    ) -> None:
        self._render, self._time_in_ms = render, time_in_ms
        self._fillers: PlainCache[Optional[Filler]] = PlainCache(self._compile, _CACHE_SIZE)
        # A user's logins differ only in created_at (and id): their template is found by their text,
        # cheaper than by their plain key, with their event.original baked in (include_original)
        # rather than escaped one by one, which costs more than the rest of the fill.
        self._by_text: TextCache[Template] = TextCache(_CACHE_SIZE)
        # the last options value, its ingest time's bytes in a template and its value in a document
        self._stamp: Tuple[Any, bytes, Any] = (None, b"", None)

    def event(self, record: AuditRecord, opts: NormalizeOptions) -> Event:
        """The record's event. A login whose template is found by its canonical text (``TextCache``) is
        filled here, in one call: most of a trail, where each call of the rest costs a tenth of the fill."""
        raw, event_id, ts_us, object_type, data, created = record  # one unpacking: cheaper than by name
        # Changes holding anything: no plain key (``candidate_key``), so no template serves; the
        # facts derived at once, without the text and key lookups that could only miss.
        if raw.get("changes"):
            return new_tuple(Event, (event_id, ts_us, self._full(derive(record), record, opts), True))
        known, ingest, _ = self._stamp
        if known is not opts:
            _, ingest, _ = self._restamp(opts)
        if created:
            given = created.encode()
            found = self._by_text.get(opts, data, object_type, given)
            if found is not None:
                # Event ids are hex and the canonical time ASCII without escapes: in as they are.
                time = b"%d" % (ts_us // 1000) if self._time_in_ms else given  # JSON: an integer's digits
                body = found(time, event_id.encode(), given, ingest)
                return new_tuple(Event, (event_id, ts_us, body, True))
        return new_tuple(Event, (event_id, ts_us, self._body(record, opts, ingest), True))

    def _body(self, record: AuditRecord, opts: NormalizeOptions, ingest: bytes) -> bytes:
        """The event's bytes when no template is found by the record's text: the plain key's template,
        kept by the text when it can serve (with include_original, a new one with the text baked
        in), else a full render. ``ingest``: ``_stamp``'s."""
        filler = self._fillers.get(record, opts)
        if not filler:
            return self._full(facts(record), record, opts)
        created = record.time_text
        given = created.encode() if created else jsonutil.string_content(record.raw["created_at"])
        time = b"%d" % (record.ts_us // 1000) if self._time_in_ms else record.timestamp.encode()
        values = (time, record.event_id.encode(), given, ingest)
        template = filler.template
        parts = around_created_at(record) if created and filler.bakeable else None
        if parts is not None:  # a text not seen yet (per options value): found by it from now on
            kept = self._bake(filler.key, opts, parts) if opts.include_original else template
            if kept is not None:
                self._by_text.put(record, opts, parts, kept)
                return kept(*values)
            filler.bakeable = False
        if not opts.include_original:
            return template(*values)
        return template(*values, jsonutil.json_in_string(record.serialized or record.canonical))

    def _full(self, found: Facts, record: AuditRecord, opts: NormalizeOptions) -> bytes:
        """The event's bytes rendered in full from the record's facts."""
        return jsonutil.dumps(self._render(found, opts, self.own(record, opts)))

    def document(self, record: AuditRecord, opts: NormalizeOptions) -> Dict[str, Any]:
        return self._render(facts(record), opts, self.own(record, opts))

    def own(self, record: AuditRecord, opts: NormalizeOptions) -> Own:
        raw, event_id, ts_us, _, serialized, time_text = record  # one unpacking, as in ``event``
        known, _, ingest = self._stamp
        if known is not opts:
            _, _, ingest = self._restamp(opts)
        time = ts_us // 1000 if self._time_in_ms else time_text or record.timestamp
        original = (serialized or record.canonical).decode("utf-8") if opts.include_original else None
        return time, event_id, raw["created_at"], ingest, original

    def _time(self, opts: NormalizeOptions) -> Any:
        """The ingest time as the event holds it."""
        us = opts.ingest_time_us
        return us // 1000 if self._time_in_ms else _ingest_text(us)

    def _restamp(self, opts: NormalizeOptions) -> Tuple[Any, bytes, Any]:
        """The ingest time's bytes in a template's hole and its value, kept with ``opts`` (one options
        value a pass)."""
        value = self._time(opts)
        stamp = jsonutil.dumps(value)
        if not self._time_in_ms:
            stamp = stamp[1:-1]  # a text hole: its quotes are the template's
        self._stamp = kept = (opts, stamp, value)
        return kept  # not self._stamp: another thread may have stamped its own since

    def _compile(self, key: PlainKey, opts: NormalizeOptions) -> Optional[Filler]:
        original = hole(4) if opts.include_original else None
        holes: Own = (hole(0), hole(1), hole(2), hole(3), original)
        template = self._template(key, opts, holes, 4 if original is None else 5)
        return Filler(template, key) if template else None

    def _bake(self, key: PlainKey, opts: NormalizeOptions, parts: Tuple[bytes, bytes]) -> Optional[Template]:
        """The template of a plain key with a record's canonical text in place of ``event.original``,
        created_at (between ``parts``) left a hole in it."""
        original = parts[0].decode("utf-8") + hole(2) + parts[1].decode("utf-8")
        return self._template(key, opts, (hole(0), hole(1), hole(2), hole(3), original), 4)

    def _template(self, key: PlainKey, opts: NormalizeOptions, holes: Own, count: int) -> Optional[Template]:
        body = jsonutil.dumps(self._render(plain_facts(key), opts, holes))
        return compile_template(body, count, (0, 3) if self._time_in_ms else ())


@functools.lru_cache(maxsize=8)  # one ingest time per pass
def _ingest_text(us: int) -> str:
    return format_us(us)
