"""Flatten an audit record's ``changes`` into safe, mapping-stable fields, and diff role lists.

Field names. A change key becomes one field-name segment (``emailauth.audit.changes.<name>``):
NFKD-decomposed with combining marks dropped (``café`` -> ``cafe``), lowercased, every run of
characters outside ``[a-z0-9_]`` (dots included, so a key never opens a nested object) replaced by
one ``_``, ``_`` trimmed from both ends, cut to 64 characters; an empty result is ``unnamed``. Keys
are taken in sorted order and a name already taken gets ``_2``, ``_3``, ... so names are unique and
deterministic. When the name differs from the key, the key itself is kept beside the values (``key``).

Values. Every value is keyword-compatible, so one field never needs two Elasticsearch mappings:
strings stay as they are (never truncated: ``ignore_above`` keeps long ones out of the index but
in ``_source``), numbers and booleans become their JSON text (``3``, ``true``), null stays null,
a list of scalars stays a list (of those texts), and anything nested (objects, lists holding lists
or objects) becomes its JSON text with sorted keys.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from .memo import text_cache

Keyword = Union[None, str, List[Optional[str]]]
TextSides = Tuple[Optional[str], Optional[str]]  # (before, after) of a change of texts

MAX_NAME = 64
_UNSAFE = re.compile(r"[^a-z0-9_]+")
_STR = frozenset({str})
_DMARC_START = "v=DMARC1"  # how a DMARC record starts, neither an SPF nor a DKIM record (``flatten``)
# json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")) without building
# the encoder on every call, as json.dumps does for any argument besides the value.
_TEXT_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def safe_name(key: Any) -> str:
    """One key as a field-name segment (see the module docstring); not yet made unique."""
    return _safe_name(str(key))


@text_cache(4096)  # records repeat their change keys and DMARC tags
def _safe_name(key: str) -> str:
    text = unicodedata.normalize("NFKD", key)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    name = _UNSAFE.sub("_", text).strip("_")[:MAX_NAME].rstrip("_")
    return name or "unnamed"


def safe_names(keys: Iterable[Any]) -> Mapping[Any, str]:
    """Map every key to a unique safe name; sorted order decides who gets the plain name. Shared
    between calls with the same keys: do not change it."""
    given = tuple(keys)
    if _STR.issuperset(map(type, given)):  # JSON keys: the mapping is cached
        return _names_of(given)
    return _names(given)


@text_cache(4096)  # records of one kind carry the same keys in the same order
def _names_of(keys: Tuple[str, ...]) -> Mapping[str, str]:
    return _names(keys)


def _names(keys: Tuple[Any, ...]) -> Dict[Any, str]:
    ordered = sorted(keys, key=str)
    return dict(zip(ordered, _unique_names(tuple(map(str, ordered)))))


@text_cache(4096)  # records of one kind carry the same set of keys
def _unique_names(keys: Tuple[str, ...]) -> Tuple[str, ...]:
    names: List[str] = []
    taken: set[str] = set()
    for key in keys:
        base = name = _safe_name(key)
        n = 2
        while name in taken:
            name = f"{base}_{n}"
            n += 1
        taken.add(name)
        names.append(name)
    return tuple(names)


def _scalar_texts(items: Iterable[Any]) -> Optional[List[Optional[str]]]:
    """``as_text`` of each item when every item is a scalar (null, text, number, boolean; bool is
    an int), else None. One loop, no call for text or null: role lists pass here on every change."""
    out: List[Optional[str]] = []
    for item in items:
        if item is None or item.__class__ is str:
            out.append(item)
        elif isinstance(item, (str, int, float)):
            out.append(as_text(item))
        else:
            return None
    return out


def as_text(value: Any) -> Optional[str]:
    """A value as one keyword string (null stays None)."""
    if value is None or value.__class__ is str or isinstance(value, str):  # exact str: no call
        return value
    if value.__class__ is list and _STR.issuperset(map(type, value)):  # a role list, as CEF writes it
        return _list_text(tuple(value))
    # The standard library, not jsonutil: these texts land in golden files and must not depend on
    # whether orjson is installed.
    return _TEXT_ENCODER.encode(value)


@text_cache(4096)  # a trail repeats its role sets; texts only, so 1 and true never share an entry
def _list_text(items: Tuple[str, ...]) -> str:
    return _TEXT_ENCODER.encode(list(items))


def as_keyword(value: Any) -> Keyword:
    """A value as a keyword or a list of keywords: lists of scalars stay lists."""
    if value is None or value.__class__ is str:  # most values: no call
        return value
    if value.__class__ is list and _STR.issuperset(map(type, value)):  # a role list: no loop
        return value.copy()
    texts = _scalar_texts(value) if isinstance(value, list) else None
    return as_text(value) if texts is None else texts


def as_pair(value: Any) -> Optional[Tuple[Any, Any]]:
    """(before, after) when the value is a change pair (a list of exactly two), else None."""
    if (value.__class__ is list or isinstance(value, list)) and len(value) == 2:  # exact list: no call
        return value[0], value[1]
    return None


def flatten(
    changes: Mapping[str, Any],
    names: Optional[Mapping[Any, str]] = None,
    texts: Optional[List[Tuple[str, TextSides]]] = None,
) -> Dict[str, Dict[str, Keyword]]:
    """``{name: {"before", "after"}}`` for pairs, ``{name: {"value"}}`` otherwise, plus ``key`` if renamed.
    ``names`` is ``safe_names(changes)`` when the caller has it. ``texts``, when given, gets the
    ``(name, (before, after))`` of each change that may hold an SPF or DKIM record
    (``txtrecords.fields``): a pair whose sides are text or null, or a lone text (``(None, text)``),
    with a ``=`` in some side not starting ``v=DMARC1``. Every SPF or DKIM record has a ``=``; a
    DMARC record starts so, and its first term is not ``v=spf1`` nor its ``v`` tag ``DKIM1``, so a
    DMARC change (half the change records) is not tried as one. Found in this loop rather than in
    another one over the changes."""
    out: Dict[str, Dict[str, Keyword]] = {}
    # as_pair and as_keyword spelled out for their usual cases (a list pair, text or null): this
    # loop runs on every change of every change record.
    for key, name in (safe_names(changes) if names is None else names).items():
        value = changes[key]
        entry: Dict[str, Keyword]
        if (value.__class__ is list or isinstance(value, list)) and len(value) == 2:
            before, after = value
            entry = {
                "before": before if before is None or before.__class__ is str else as_keyword(before),
                "after": after if after is None or after.__class__ is str else as_keyword(after),
            }
        else:
            before, after = None, value
            entry = {"value": value if value is None or value.__class__ is str else as_keyword(value)}
        if name != key:
            entry["key"] = str(key)
        out[name] = entry
        dmarc_key = key == "dmarc_txt_record"  # analysed by its key; a DMARC text under another, by content
        if (  # exact str first: no call for the usual sides
            texts is not None
            and (before is None or before.__class__ is str or isinstance(before, str))
            and (after is None or after.__class__ is str or isinstance(after, str))
            and (
                (before is not None and "=" in before and not (dmarc_key and before.startswith(_DMARC_START)))
                or (after is not None and "=" in after and not (dmarc_key and after.startswith(_DMARC_START)))
            )
        ):
            texts.append((name, (before, after)))
    return out


def role_list(value: Any) -> Optional[List[str]]:
    """One side of a role change as role names, or None when it is not a role list at all.

    A lone string is one role and null is no role; a list keeps its order (scalars as text, nulls
    and repeats dropped). Objects or nested lists are not roles: the caller keeps them as plain
    changes only.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        return None
    try:
        names = _role_names(tuple(value))
    except TypeError:  # an object or a list among them (unhashable): not roles
        return None
    return None if names is None else list(names)


@text_cache(4096)  # a trail repeats its role sets; texts only are kept, so 1 and true never share an entry
def _role_names(items: Tuple[Any, ...]) -> Optional[Tuple[str, ...]]:
    texts = _scalar_texts(items)
    if texts is None:
        return None
    names = dict.fromkeys(texts)  # first occurrences, in order
    names.pop(None, None)
    return tuple(names)  # type: ignore[arg-type]


def role_diff(before: Iterable[str], after: Iterable[str]) -> Tuple[List[str], List[str]]:
    """(added, removed), each sorted and without duplicates."""
    old, new = set(before), set(after)
    # a change mostly grants or takes: the side it leaves empty is found by a subset test, no set
    # difference made and sorted
    return ([] if new <= old else sorted(new - old)), ([] if old <= new else sorted(old - new))
