"""The scheduler's edge: its document in the state store (``marks``), read once before a run and
written once after it, and the calls ``app.run_once`` makes between.

The document is advice, not state: it only chooses and orders work. One that cannot be read counts
as empty (every stream is due, the first streams of the plan first); a lost race on it (two runs at
once) is logged and ignored; a run with nothing new to remember writes nothing. Delivery stays
exactly as safe whatever it holds. Every store keeps it (local, S3, DynamoDB, the KV store): the
slot ``scheduler`` beside the stream states.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

from ..api.client import ApiClient
from ..errors import StateError
from ..records import AuditRecord
from ..report import RunReport
from ..state.store import ConditionalSlot
from ..stop import Stopped
from ..streams import Stream
from .actors import active_in, actors_in, extra_users, note_actors, note_listing
from .hints import Homes, due_within
from .marks import Book, Marks, read_marks
from .orgindex import ORG_NAME, Hints, active, backstop, consult, lied, plan_indexed, standing, unexpected
from .policy import Policy
from .priority import Outcome, RunPlan, plan_run, record_run

log = logging.getLogger(__name__)

NAME = "scheduler"


class Scheduler:
    def __init__(
        self,
        slot: Optional[ConditionalSlot],
        policy: Policy,
        clock: Callable[[], float] = time.time,
        window_s: Optional[float] = None,
    ) -> None:
        """``window_s``: the look-back window, within which a stream holding a copy of a record
        another stream delivered is polled (``hints``); None: not hastened."""
        self.policy = policy
        self._window_s = window_s
        self.book = Book()
        self._slot = slot
        self._clock = clock
        self._version: Optional[str] = None
        self._stored: Optional[Dict[str, Any]] = None
        self._listed: Optional[List[str]] = None  # the users endpoint's list this run, when asked
        self._seen: Set[str] = set()
        self._active: Set[str] = set()  # users that acted in another stream's records this run
        self._backstop: Dict[str, Set[str]] = {}  # domain stream -> the actors of what it delivered
        self._planned: Set[str] = set()  # this run's stream keys, once chosen
        self._homes = Homes()  # copies its deliveries leave in other streams (``hints``)
        self._began: Optional[int] = None  # when this run chose its streams
        self._hints: Optional[Hints] = None  # what the org-wide index told this run, when asked
        self._pending: Sequence[str] = ()  # streams it named that earlier runs left unread
        self._lies: Dict[str, int] = {}  # object type -> records its index lacked (``orgindex``)
        # _seen, _active, _backstop, _homes and _lies: stream threads add to them
        self._lock = threading.Lock()

    @classmethod
    def for_store(
        cls,
        store: Any,
        policy: Policy,
        clock: Callable[[], float] = time.time,
        window_s: Optional[float] = None,
    ) -> Scheduler:
        """The scheduler over ``store``'s ``scheduler`` slot (every store has one; a store without,
        such as a test's, gets a scheduler that remembers nothing)."""
        slot = getattr(store, "slot", None)
        return cls(slot(NAME) if slot is not None else None, policy, clock, window_s)

    def load(self) -> None:
        if self._slot is None:
            return
        try:
            doc, self._version = self._slot.read()
        except StateError as exc:  # no version to replace it by: it stays until removed
            log.warning(
                "scheduler document %s unreadable: every stream is due until it is removed",
                self._slot.location,
                extra={"error": str(exc)},
            )
            self._slot = None
            return
        try:
            self.book = read_marks(doc)
            self._stored = doc
        except ValueError as exc:  # ours to replace: its version is known
            log.warning("scheduler document not understood: every stream is due", extra={"error": str(exc)})
        self._pending = self.book.pending

    def users(self, fetch: Callable[[], List[str]]) -> List[str]:
        """The users to pull: the users endpoint's list (``fetch``), reused for the cache's time,
        and the actors it does not list (``actors``)."""
        now = int(self._clock())
        cached = self.book.users
        if cached is not None and 0 <= now - cached[0] < self.policy.users_cache_s:
            listed = list(cached[1])
        else:
            listed = fetch()
            note_listing(self.book, listed, cached[1] if cached else None, now)
            self.book.users = (now, tuple(listed))
        self._listed = listed
        extras = extra_users(self.book, listed, now)
        if extras:
            log.info("users the users endpoint does not list are pulled too", extra={"count": len(extras)})
        return listed + extras

    def consult(
        self,
        client: ApiClient,
        planned: Sequence[Stream],
        delivered: Callable[[str], bool],
        *,
        page_limit: int,
        max_pages: int,
        window_s: int,
        probe_since_us: int,
        source: bool = True,
    ) -> Hints:
        """Ask the org-wide index which streams hold records not delivered (``orgindex``), before
        ``choose``; it is probed first where the document holds no verdict (or an old refusal).
        Not in a run that reads every stream for the first time: it could save nothing there.
        ``source=False`` (the fan-out planner: its workers cannot be handed the answers): an index
        only, every stream it names is planned first, no org-wide stream ships its records."""
        self._pending = self.book.pending
        if not any(self.book.streams.get(s.key, Marks()).polled_s is not None for s in planned):
            self._hints = Hints()
            return self._hints
        self._hints = consult(
            client,
            planned,
            self.book,
            int(self._clock() * 1_000_000),
            delivered=delivered,
            page_limit=page_limit,
            max_pages=max_pages,
            window_s=window_s,
            probe_since_us=probe_since_us,
            interval_s=self.policy.interval_s,
        )
        if not source:
            self._hints.answers.clear()
            self._hints.sourced.clear()
        with self._lock:
            self._seen |= self._hints.actors
        if self._hints.reads:
            log.info(
                "org-wide index read",
                extra={"named": len(self._hints.named), "api_calls": self._hints.calls},
            )
        return self._hints

    def choose(self, planned: Sequence[Stream]) -> RunPlan:
        now = self._clock()
        last = self.book.run_s
        cadence = now - last if last is not None and now - last < 2 * self.policy.interval_s else None
        if self._hints is not None and self._hints.reads:
            chosen = plan_indexed(planned, self.book.streams, now, self.policy, self._hints, cadence)
        else:
            chosen = plan_run(planned, self.book.streams, now, self.policy, cadence)
        self._began = int(now)
        self._planned = {s.key for s in planned}
        budget = self.policy.budget_calls
        if budget is not None and chosen.needed > budget:
            log.warning(
                "the run budget is below what the revisit bounds need: raise FORWARDER_RUN_BUDGET_CALLS "
                "or FORWARDER_MAX_RPS, or lengthen FORWARDER_COLD_REVISIT or FORWARDER_DOMAIN_REVISIT",
                extra={"budget_calls": budget, "due_streams": chosen.needed},
            )
        return chosen

    def seen(self, stream: Stream, records: Sequence[AuditRecord]) -> None:
        """Records a stream handed to the sink: the actors they name, and those active in another
        trail than their own (thread-safe)."""
        found = actors_in(records)
        active = active_in(stream.object_type, stream.name, records)
        # A run handed its streams (a fan-out worker) checks them against the index's last reads.
        hints = self._hints if self._hints is not None else standing(self.book)
        mark = self.book.streams.get(stream.key)
        first = mark is None or mark.polled_s is None
        missed = unexpected(hints, stream, records, self._pending, first)
        with self._lock:
            self._seen |= found
            self._active |= active
            if stream.object_type == "domain":  # "": an actor that is not a user (an API client)
                actors = {r.actor.strip().lower() if "@" in r.actor else "" for r in records}
                self._backstop.setdefault(stream.key, set()).update(actors)
            self._homes.note(stream, records, self._planned)
            if missed:
                self._lies[stream.object_type] = self._lies.get(stream.object_type, 0) + missed

    def bucket(self, rate: float) -> Optional[float]:
        """The rate bucket's tokens now, from what the last run left (refilled since), or None."""
        if self.book.bucket is None:
            return None
        at, tokens = self.book.bucket
        return tokens + max(0.0, self._clock() - at) * rate

    def finish(self, planned: Sequence[Stream], report: RunReport, tokens: Optional[float]) -> None:
        """Remember what the run did; write the document if that changed it."""
        now = int(self._clock())
        polled = {s.stream for s in report.streams}
        users = {s.name.lower() for s in planned if s.object_type == "user"}
        # A domain stream is a backstop: records whose actors all have user streams come through
        # those (heated below) from now on, so delivering them does not make it hot.
        covered = {key for key, actors in self._backstop.items() if actors <= users}
        outcome = Outcome(
            polled=polled,
            # Cut short (a stop, a page cap) or failed: hot too, so the next run reads it again.
            delivered={
                s.stream
                for s in report.streams
                if (s.new and s.stream not in covered) or s.stopped or s.truncated or s.error
            },
            active={s.key for s in planned if s.object_type == "user" and s.name.lower() in self._active},
        )
        keys = [s.key for s in planned]
        self._note_index(self._hints, report, now)
        delivering: Dict[str, int] = {}
        for stream in report.streams:
            if stream.new:
                kind = stream.stream.partition("/")[0]
                delivering[kind] = delivering.get(kind, 0) + 1
        active(self.book, delivering, now, self.policy.interval_s)
        self.book.streams = record_run(self.book.streams, keys, outcome, now, self.policy, self.book.run_s)
        if self._window_s is not None:
            copies = set(self._homes.copies)
            policy = self.policy
            if self._hints is not None:  # streams an answer named, whatever the org-wide stream shipped
                copies |= set(self._hints.sourced)
                policy = backstop(self.policy, self._hints)
            copies -= outcome.polled  # one polled in this run settled them there
            self.book.streams = due_within(self.book.streams, copies, now, self._window_s, policy)
        # The users endpoint's list, this run's or the cached one (a fan-out worker is handed its
        # plan); none when FORWARDER_USERS names the users: then nobody else is pulled.
        listed = self._listed if self._listed is not None else (self.book.users or (0, None))[1]
        if listed is not None:
            note_actors(self.book, self._seen, listed, now)
        if tokens is not None:
            self.book.bucket = (round(self._clock(), 3), round(tokens, 3))
        last = self.book.run_s
        if self._began is not None and (last is None or self._began - last >= self.policy.interval_s / 2):
            self.book.run_s = self._began  # back-to-back runs keep the first's: the document stays
        self._save()

    def _note_index(self, hints: Optional[Hints], report: RunReport, now: int) -> None:
        """Streams the index named that this run left unread stay named, and so do the streams cut
        short or failed (where the index is not used, they are hot); an index that lacked records
        a stream delivered is used no more. ``hints``: None in a run handed its streams (a fan-out
        worker): the streams it read are named no more."""
        read = {s.stream for s in report.streams if not (s.stopped or s.truncated or s.error)}
        if hints is None:
            self.book.pending = tuple(k for k in self.book.pending if k not in read)
        else:
            # A stream whose records an org-wide stream shipped, that stream having ended cleanly.
            read |= {k for k, kind in hints.sourced.items() if f"{kind}/{ORG_NAME}" in read}
            unread = [s.stream for s in report.streams if s.stream not in read and s.stream in self._planned]
            self.book.pending = tuple(dict.fromkeys([k for k in hints.named if k not in read] + unread))
        for object_type, count in sorted(self._lies.items()):
            lied(self.book, object_type, count, now * 1_000_000)

    def _save(self) -> None:
        if self._slot is None:
            return
        doc = self.book.to_doc()
        if _same(doc, self._stored):
            return
        try:
            self._version = self._slot.put(doc, self._version)
            self._stored = doc
        except (StateError, Stopped) as exc:  # ConflictError included: another run wrote it; its word
            # stands. Stopped: a second stop request cuts even this write; the next run is due early.
            log.warning("scheduler document not saved", extra={"error": str(exc)})


def _same(doc: Dict[str, Any], stored: Optional[Dict[str, Any]]) -> bool:
    if stored is None:
        return False
    try:
        return read_marks(doc) == read_marks(stored)
    except ValueError:
        return False
