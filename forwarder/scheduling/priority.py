"""One run's streams, chosen from the marks (pure: the clock and the marks come in).

A run polls, in this order:

1. overdue streams: never polled, or polled so long ago that waiting for the next run would pass
   their revisit bound (``FORWARDER_COLD_REVISIT``, domains ``FORWARDER_DOMAIN_REVISIT``), the
   oldest first: a run cut short (budget, deadline) leaves them to the next, which starts with them;
2. hot streams, the likeliest to hold new records first, as many as the call budget leaves beside
   the other two groups. A stream is hot while its heat is above one half: each sign of activity
   (a delivery, or its actor's records in another stream) adds one, and it halves every hot window
   (``FORWARDER_HOT_WINDOW``). A stream that delivered once is hot for the hot window, as long as
   an hour at 5 minutes; one that delivers every few runs stays hot for a few windows after its
   last record (four at most: ``MAX_HEAT``), since its quiet spells are longer than the window
   now and then;
3. each group's turn (users, domains): the cold streams polled longest ago, as many as spread the
   group over its revisit bound, one share per run, instead of all at once;
4. the hot streams the budget left out of the second group.

In steady state nothing is overdue (the turns keep ahead of the bounds), so the hot streams lead.
Everything else is not due and skipped. Invariant (tests/scheduling/test_priority.py, a property
test): with runs every interval, each getting through at least its first three groups, every stream
is polled within its revisit bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..streams import Stream
from .marks import Marks
from .policy import Policy

_NONE = Marks()
MAX_HEAT = 8.0  # hot for at most log2(2 * 8) = 4 hot windows after the last sign of activity


@dataclass(frozen=True)
class RunPlan:
    order: List[Stream]  # to start, in this order
    not_due: List[Stream]  # skipped this run
    needed: int  # streams the revisit bound needs polled this run (groups 2 and 3)
    hot: int


def plan_run(
    streams: Sequence[Stream],
    marks: Mapping[str, Marks],
    now_s: float,
    policy: Policy,
    cadence_s: Optional[float] = None,
) -> RunPlan:
    """``cadence_s``: the time since the last run began, when known. Runs that come later than the
    interval says get larger turns, so the bounds hold at the cadence the runs really have."""
    step = max(policy.interval_s, cadence_s or 0.0)
    hot: List[Stream] = []
    overdue: List[Stream] = []
    cold: Dict[str, List[Stream]] = {"user": [], "domain": []}
    for stream in streams:
        mark = marks.get(stream.key, _NONE)
        if _overdue(stream, mark, now_s, step, policy):
            overdue.append(stream)
        elif heat(mark, now_s, policy) > 0.5:
            hot.append(stream)
        else:
            cold["domain" if stream.object_type == "domain" else "user"].append(stream)
    hot.sort(key=lambda s: (-heat(marks.get(s.key, _NONE), now_s, policy), s.key))
    overdue.sort(key=lambda s: (marks.get(s.key, _NONE).polled_s or -1, s.object_type == "domain", s.key))
    turns: List[Stream] = []
    rest: List[Stream] = []
    for object_type, group in cold.items():
        late = sum(1 for s in overdue if (s.object_type == "domain") == (object_type == "domain"))
        turn, left = _turn(group, late, marks, now_s, step, policy)
        turns += turn
        rest += left
    needed = overdue + turns
    budget = policy.budget_calls
    if budget is not None and len(needed) > budget:
        # A backlog of first reads (or a budget too small): half the budget still goes to the hot
        # streams, first, so records keep flowing while the rest is read over the next runs.
        share = min(len(hot), budget // 2)
        return RunPlan(hot[:share] + needed + hot[share:], rest, len(needed), len(hot))
    room = len(hot) if budget is None else budget - len(needed)
    return RunPlan(overdue + hot[:room] + turns + hot[room:], rest, len(needed), len(hot))


def heat(mark: Marks, now_s: float, policy: Policy) -> float:
    """A stream's heat now: its signs of activity, each halved every hot window since."""
    if mark.delivered_s is None or policy.hot_window_s <= 0:  # a zero window: nothing is ever hot
        return 0.0
    return float(mark.heat * 2.0 ** (-max(0.0, now_s - mark.delivered_s) / policy.hot_window_s))


def _overdue(stream: Stream, mark: Marks, now_s: float, step: float, policy: Policy) -> bool:
    """Never polled, or past its bound by the next run."""
    polled = mark.polled_s
    return polled is None or now_s - polled + step > policy.revisit_s(stream.object_type)


def _turn(
    group: List[Stream], late: int, marks: Mapping[str, Marks], now_s: float, step: float, policy: Policy
) -> Tuple[List[Stream], List[Stream]]:
    """(this run's turn, not due) of a cold group that has ``late`` streams overdue besides, each
    oldest poll first."""
    if not group:
        return [], []
    revisit = policy.revisit_s(group[0].object_type)
    oldest = sorted(group, key=lambda s: (marks.get(s.key, _NONE).polled_s or -1, s.key))
    # Runs left before the bound, counting this one, less one run of slack: a lap over the group
    # fits in them. Not rounded down: a cadence a little past the interval (a run that started a
    # second late) would otherwise cost a whole run's worth of turns (90 polls instead of 73 at
    # 360 cold users and a 60 s bound); the streams a short turn leaves go overdue and first.
    runs = max(1.0, revisit / step - 1) if step > 0 else 1.0
    pace = (len(group) + late) / runs
    # A fractional pace is spread over the runs by the run's number (floor(pace * k), k the intervals
    # since the epoch), not rounded up in each: 1,000 backstops within 576 intervals cost 1.7 polls a
    # run, not 2 per object type. A run that takes too few leaves streams overdue: the next takes them.
    k = math.floor(now_s / policy.interval_s) if policy.interval_s > 0 else 0
    quota = max(0, math.floor(pace * (k + 1)) - math.floor(pace * k) - late)
    return oldest[:quota], oldest[quota:]


def _spreads(keys: Sequence[str], policy: Policy) -> Dict[str, int]:
    """Seconds to date back the first polls of ``keys`` (read in one run): per object type, evenly
    over [0, the bound less two intervals), in key order."""
    result: Dict[str, int] = {}
    for object_type in ("user", "domain"):
        group = sorted(k for k in keys if (k.partition("/")[0] == "domain") == (object_type == "domain"))
        span = max(0.0, policy.revisit_s(object_type) - 2 * policy.interval_s)
        result.update({key: int(span * i / len(group)) for i, key in enumerate(group)})
    return result


@dataclass
class Outcome:
    """What a run did, as the marks need it."""

    polled: Set[str] = field(default_factory=set)
    delivered: Set[str] = field(default_factory=set)
    # Streams whose actor's records came through other streams (an actor active there is likely
    # active in its own trail too): as good a sign of activity as a delivery.
    active: Set[str] = field(default_factory=set)


def record_run(
    marks: Mapping[str, Marks],
    planned: Sequence[str],
    outcome: Outcome,
    now_s: int,
    policy: Policy,
    last_run_s: Optional[int] = None,
) -> Dict[str, Marks]:
    """The marks after a run: poll and delivery times moved, heat added for each stream that
    delivered or was active (``Outcome``), streams no longer planned dropped.

    A run that began within half an interval of the last one (``last_run_s``: a test, a retry by
    hand) moves no poll time, and a delivery time moves once it is half an interval old: back-to-back
    runs leave the document as it was. A stored time is never later than the real one, so a stream
    is only ever due early. A stream's first poll is dated back by a share of its bound
    fixed by its key: the streams a first run reads all at once come due spread over the next lap,
    not all in the same run again."""
    fresh = policy.interval_s / 2
    again = last_run_s is not None and 0 <= now_s - last_run_s < fresh
    spreads = _spreads(
        [k for k in planned if k in outcome.polled and marks.get(k, _NONE).polled_s is None], policy
    )
    result: Dict[str, Marks] = {}
    for key in planned:
        mark = marks.get(key, _NONE)
        polled, delivered, warmth = mark.polled_s, mark.delivered_s, mark.heat
        if key in outcome.polled:
            if polled is None:
                polled = now_s - spreads[key]
            elif not again:
                polled = now_s
        active = key in outcome.delivered or key in outcome.active
        if active and (delivered is None or now_s - delivered >= fresh):
            warmth = round(min(MAX_HEAT, heat(mark, now_s, policy) + 1.0), 3)
            delivered = now_s
        result[key] = Marks(polled, delivered, warmth)
    return result
