"""The scheduler document: what the scheduler remembers between runs, one small document per store
(``scheduler``), beside the stream states::

    {"schema": 1, "packed": "<zlib + base64 of the JSON below>"}
    {"streams": {"<key>": [polled, delivered(, heat)]}, "users": [fetched, ["a@x", ...]],
     "actors": {"<email>": last seen}, "departed": {"<email>": left}, "bucket": [at, tokens],
     "run": <when the last run began>,
     "orgwide": {"<object type>": [honoured, probe again at, cursor, trusted]}, "pending": ["<key>", ...]}

Times are whole epoch seconds (``at`` a float); a stream's heat is left out when it is 1 (one
delivery). Packed, since a thousand stream keys and a users list compress about fourfold and a
DynamoDB item holds 400 KB. The document is advice, not state: one that cannot be read counts as
empty (``read_marks``), and delivery stays exactly as safe.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

SCHEMA = 1
MAX_NAMES = 10_000  # discovered actors, departed users: the most recent are kept


@dataclass(frozen=True)
class Marks:
    """When a stream was last polled, and last showed activity (epoch seconds): it delivered a new
    record, or its actor's records came through another stream. ``heat``: the activity signs
    counted with a half-life of the hot window, as of ``delivered_s`` (``priority``)."""

    polled_s: Optional[int] = None
    delivered_s: Optional[int] = None
    heat: float = 1.0


@dataclass(frozen=True)
class IndexMark:
    """What the scheduler knows of an object type's name-less (org-wide) query (``orgindex``)."""

    honoured: bool
    probe_at_s: int  # not honoured: when to probe it again
    cursor_us: Optional[int] = None  # the next read asks for the records newer than this
    trusted_us: Optional[int] = None  # every record newer than this was in an answer (or pending)


@dataclass
class Book:
    streams: Dict[str, Marks] = field(default_factory=dict)
    users: Optional[Tuple[int, Tuple[str, ...]]] = None  # (fetched, the users endpoint's emails)
    actors: Dict[str, int] = field(default_factory=dict)  # found in records, not listed -> last seen
    departed: Dict[str, int] = field(default_factory=dict)  # listed once, no longer -> when it left
    bucket: Optional[Tuple[float, float]] = None  # the rate bucket at the end of the last run
    run_s: Optional[int] = None  # when the last run began: the cadence runs really have
    orgwide: Dict[str, IndexMark] = field(default_factory=dict)  # object type -> its org-wide query
    pending: Tuple[str, ...] = ()  # streams the org-wide index named that a run left unread

    def to_doc(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {
            "streams": {k: _stream(m) for k, m in sorted(self.streams.items())},
            "actors": _newest(self.actors),
            "departed": _newest(self.departed),
        }
        if self.users is not None:
            body["users"] = [self.users[0], list(self.users[1])]
        if self.bucket is not None:
            body["bucket"] = list(self.bucket)
        if self.run_s is not None:
            body["run"] = self.run_s
        if self.orgwide:
            body["orgwide"] = {
                k: [m.honoured, m.probe_at_s, m.cursor_us, m.trusted_us]
                for k, m in sorted(self.orgwide.items())
            }
        if self.pending:
            body["pending"] = list(self.pending)
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return {"schema": SCHEMA, "packed": base64.b64encode(zlib.compress(text, 9)).decode("ascii")}


def read_marks(doc: Optional[Dict[str, Any]]) -> Book:
    """The book a document holds; ValueError naming what is wrong with one that is not ours."""
    if doc is None:
        return Book()
    if doc.get("schema") != SCHEMA or not isinstance(doc.get("packed"), str):
        raise ValueError(f"not a schema-{SCHEMA} scheduler document")
    try:
        body = json.loads(zlib.decompress(base64.b64decode(doc["packed"].encode("ascii"), validate=True)))
    except (ValueError, zlib.error, binascii.Error):
        raise ValueError("the scheduler document is corrupt") from None
    if not isinstance(body, dict):
        raise ValueError("the scheduler document holds no object")
    return Book(
        streams={k: Marks(_time(v, 0), _time(v, 1), _heat(v)) for k, v in _dict(body, "streams").items()},
        users=_users(body.get("users")),
        actors=_times(_dict(body, "actors")),
        departed=_times(_dict(body, "departed")),
        bucket=_bucket(body.get("bucket")),
        run_s=_time([body.get("run")], 0),
        orgwide=_orgwide(_dict(body, "orgwide")),
        pending=_keys(body.get("pending")),
    )


def _stream(marks: Marks) -> List[Any]:
    times: List[Any] = [marks.polled_s, marks.delivered_s]
    return times if marks.heat == 1.0 else [*times, marks.heat]


def _dict(body: Dict[str, Any], name: str) -> Dict[str, Any]:
    value = body.get(name)
    return value if isinstance(value, dict) else {}


def _time(pair: Any, i: int) -> Optional[int]:
    value = pair[i] if isinstance(pair, list) and len(pair) > i else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _heat(pair: Any) -> float:
    value = pair[2] if isinstance(pair, list) and len(pair) > 2 else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6:
        return float(value)
    return 1.0


def _times(found: Dict[str, Any]) -> Dict[str, int]:
    return {k: v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def _users(value: Any) -> Optional[Tuple[int, Tuple[str, ...]]]:
    if isinstance(value, list) and len(value) == 2:
        fetched, names = value
        if isinstance(fetched, int) and isinstance(names, list):
            return fetched, tuple(n for n in names if isinstance(n, str))
    return None


def _bucket(value: Any) -> Optional[Tuple[float, float]]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    return None


def _keys(value: Any) -> Tuple[str, ...]:
    return tuple(k for k in value if isinstance(k, str)) if isinstance(value, list) else ()


def _orgwide(found: Dict[str, Any]) -> Dict[str, IndexMark]:
    marks: Dict[str, IndexMark] = {}
    for object_type, value in found.items():
        probed = _time(value, 1)
        if isinstance(value, list) and len(value) == 4 and isinstance(value[0], bool) and probed is not None:
            marks[object_type] = IndexMark(value[0], probed, _time(value, 2), _time(value, 3))
    return marks


def _newest(names: Dict[str, int]) -> Dict[str, int]:
    return dict(sorted(names.items(), key=lambda item: -item[1])[:MAX_NAMES])
