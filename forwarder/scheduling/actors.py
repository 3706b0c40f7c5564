"""Actors the users endpoint does not list (DESIGN §2, coverage): who gets a user stream beyond it.

* Discovered actors: the ``user`` of a record (a domain trail names support staff, API clients and
  deleted users) and the target of a ``user.*`` action (a role grant to an account the list hides).
  Polled for ``ACTOR_RETENTION_S`` after they were last seen: the API keeps domain history for 13
  months, and a domain record of theirs stays visible that long.
* Departed users: listed once, no longer. Polled for ``DEPARTED_RETENTION_S`` after they left: a
  deleted account's last records (its own deletion, a late login) arrive within minutes, and a month
  also covers an account that is re-listed after a while.

Both lists live in the scheduler document (``marks.Book``), case-insensitive, bounded in size.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Set

from ..records import AuditRecord
from .marks import Book

# The API keeps 13 months of domain history: thirteen calendar months are at least 393 days; a few
# days less leaves room for clock skew.
ACTOR_RETENTION_S = 390 * 86400
DEPARTED_RETENTION_S = 31 * 86400


def actors_in(records: Iterable[AuditRecord]) -> Set[str]:
    """The user emails ``records`` name: their actors, and the targets of user actions."""
    found: Set[str] = set()
    for record in records:
        if "@" in record.actor:
            found.add(record.actor.strip().lower())
        if record.action.startswith("user.") and "@" in record.object:
            found.add(record.object.strip().lower())
    return found


def active_in(stream_type: str, stream_name: str, records: Iterable[AuditRecord]) -> Set[str]:
    """The user emails that acted in ``records`` of another trail than their own: signs that they
    are active, and so their own trails likely to hold new records."""
    own = stream_name.strip().lower() if stream_type == "user" else None
    found = {r.actor.strip().lower() for r in records if "@" in r.actor}
    found.discard(own or "")
    return found


def note_listing(book: Book, listed: Sequence[str], previous: Optional[Sequence[str]], now_s: int) -> None:
    """A fresh users list: who left it since ``previous`` (departed now), who came back."""
    current = {n.lower() for n in listed}
    for name in previous or ():
        if name.lower() not in current:
            book.departed.setdefault(name.lower(), now_s)
    for name in current:
        book.departed.pop(name, None)
        book.actors.pop(name, None)


def note_actors(book: Book, seen: Iterable[str], listed: Sequence[str], now_s: int) -> None:
    current = {n.lower() for n in listed}
    for name in seen:
        if name not in current:
            book.actors[name] = now_s


def extra_users(book: Book, listed: Sequence[str], now_s: int) -> List[str]:
    """The unlisted users to pull this run (the expired ones are dropped from ``book``)."""
    current = {n.lower() for n in listed}
    for names, keep in ((book.actors, ACTOR_RETENTION_S), (book.departed, DEPARTED_RETENTION_S)):
        for name in [n for n, when in names.items() if now_s - when > keep or n in current]:
            del names[name]
    return sorted(set(book.actors) | set(book.departed))
