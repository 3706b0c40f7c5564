"""The scheduling settings as one value, with the defaults that follow from the schedule interval."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ..config import Settings

# Share of the interval (and of the calls the rate allows in it) a run spends by default: the rest
# is room for the token, the users list and the streams in flight when the budget runs out, so a run
# is over before the next one starts.
BUDGET_SHARE = 0.8
HOT_INTERVALS = 12  # a stream that delivered within 12 intervals (an hour at 5 minutes) is hot
COLD_INTERVALS = 6  # every user stream within 6 intervals (30 minutes at 5 minutes)
DOMAIN_INTERVALS = 72  # every domain stream within 72 intervals (6 hours at 5 minutes)
# While a trusted org-wide index names the streams holding records (``orgindex``), every stream of its
# object type within 576 intervals (48 hours at 5 minutes): 1,000 streams cost under two polls a run.
INDEX_INTERVALS = 576


@dataclass(frozen=True)
class Policy:
    interval_s: float  # how often runs start
    hot_window_s: float
    cold_revisit_s: float  # the bound on the time between two polls of a user stream
    domain_revisit_s: float  # the same for a domain stream (a backstop)
    budget_calls: Optional[int]  # API requests per run; None: unlimited
    budget_time_s: Optional[float]  # seconds per run; None: unlimited
    users_cache_s: float
    index_revisit_s: float  # the bound on a stream of an object type a trusted org-wide index covers

    def revisit_s(self, object_type: str) -> float:
        return self.domain_revisit_s if object_type == "domain" else self.cold_revisit_s


def policy_for(settings: Settings) -> Policy:
    interval = float(settings.schedule_interval_s)
    calls = settings.run_budget_calls
    if calls is None and settings.max_rps:
        calls = max(1, int(interval * settings.max_rps * BUDGET_SHARE))
    return Policy(
        interval_s=interval,
        hot_window_s=_or(settings.hot_window_s, HOT_INTERVALS * interval),
        cold_revisit_s=_or(settings.cold_revisit_s, COLD_INTERVALS * interval),
        domain_revisit_s=_or(settings.domain_revisit_s, DOMAIN_INTERVALS * interval),
        budget_calls=calls,
        budget_time_s=_or(settings.run_budget_time_s, BUDGET_SHARE * interval) if interval else None,
        users_cache_s=float(settings.users_cache_s),
        index_revisit_s=_or(settings.index_revisit_s, INDEX_INTERVALS * interval),
    )


def _or(value: Optional[int], default: float) -> float:
    return default if value is None else float(value)
