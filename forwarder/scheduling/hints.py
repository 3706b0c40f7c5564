"""Copies a delivery leaves in other streams (DESIGN §4, Scheduling). A domain record is in its
actor's trail and its domain's, and whichever stream is polled first ships it
(``delivery/claims.py``); the other stream holds a copy. Polled within the look-back window, while
the tenant's index of delivered ids still holds it, that stream skips the copy and takes it into its
state; polled later (a domain stream is a backstop, revisited within ``FORWARDER_DOMAIN_REVISIT``)
it would ship it again. So the stream holding a copy (unless polled in the same run, which settles
it there) is made due within the look-back window:

* the domain stream of a domain record a user stream delivered;
* every planned stream holding a record an org-wide stream delivered (``orgindex``).

Which stream a delivery makes hot is the scheduler's (``Scheduler.finish``: a domain stream that
delivers its actors' records is a backstop, the actors' streams are heated).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Collection, Dict, Mapping, Sequence, Set

from ..api.orgwide import holders
from ..records import AuditRecord
from ..streams import Stream
from .marks import Marks
from .orgindex import ORG_NAME
from .policy import Policy


@dataclass
class Homes:
    """The streams holding copies of what a run's streams delivered, gathered as they deliver."""

    copies: Set[str] = field(default_factory=set)

    def note(self, stream: Stream, records: Sequence[AuditRecord], planned: Collection[str]) -> None:
        """``stream`` delivers ``records``; ``planned``: the keys of the run's streams."""
        if stream.object_type == "domain" and stream.name != ORG_NAME:
            return
        for record in records:
            for kind, name in holders(record.raw):
                key = f"{kind}/{name}"
                if key in planned and (stream.name == ORG_NAME or kind == "domain"):
                    self.copies.add(key)


def due_within(
    marks: Mapping[str, Marks],
    keys: Collection[str],
    now_s: int,
    within_s: float,
    policy: Policy,
) -> Dict[str, Marks]:
    """``marks`` with the streams of ``keys`` dated back so that their revisit bound makes them due
    within ``within_s`` (a stored poll time is only ever earlier than the real one: due early)."""
    result = dict(marks)
    for key in keys:
        mark = result.get(key)
        if mark is None or mark.polled_s is None:
            continue  # never polled: due at once anyway
        kind = key.partition("/")[0]
        latest = int(now_s + within_s - policy.revisit_s(kind) - 2 * policy.interval_s)
        if latest < mark.polled_s:
            result[key] = replace(mark, polled_s=latest)
    return result
