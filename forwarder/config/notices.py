"""Settings that are accepted but most likely not what was meant: a `FORWARDER_` variable no
setting has (a misspelt name is otherwise ignored in silence) and a filter that selects none of
the known actions (an empty run with exit 0). Warnings, not errors: a newer variable set for a
newer version, or an action the catalog does not list yet, must not stop a run."""

from __future__ import annotations

import difflib
from typing import List, Mapping, Sequence

from ..actions import closest, selects_known
from .table import by_name

_SHOWN = 80  # a pasted value in a name is quoted this far at most


def unknown_variables(env: Mapping[str, str]) -> List[str]:
    out = []
    known = by_name()
    for name in sorted(n for n in env if n.startswith("FORWARDER_") and n not in known):
        near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
        hint = f"; did you mean {near[0]}?" if near else " (see the configuration table in the README)"
        out.append(f"{name[:_SHOWN]}: not a setting of this forwarder, ignored{hint}")
    return out


def unmatched_filters(filters: Sequence[str]) -> List[str]:
    out = []
    for prefix in filters:
        if not selects_known(prefix):
            near = closest(prefix)
            hint = f"; did you mean {near}?" if near else ""
            out.append(f"FORWARDER_FILTERS: {prefix[:_SHOWN]!r} selects none of the known actions{hint}")
    return out
