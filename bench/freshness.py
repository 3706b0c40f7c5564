"""Freshness under the platform's rate limit: p95 delivery lag and API calls per run, against an
oracle measured in the same run.

The simulator answers 429 (with Retry-After) past ``--max-rps`` requests per second (a server-side
token bucket), and its organization changes over real time: ``--rate`` records per second (a
Poisson process, the same for every size) made by ``--active`` of the users, ``--dmarc`` of them
DMARC changes of a domain, which appear in the actor's trail and in the domain's. Every
``--interval`` seconds, as cron would, a new ``audit-forwarder run`` process starts
(``FORWARDER_MAX_RPS`` is ``--max-rps``, users from the users endpoint, every domain in
``FORWARDER_DOMAINS``, state in a local directory); a run whose lease is held exits 75 and counts
as skipped. A loopback HEC receiver logs when each event id arrives.

The oracle, at the same ticks: an ideal poller that knows which streams hold records it has not
delivered (the actor's, and for a DMARC change the domain's too) and polls only those, one request
after another at ``--max-rps`` at most, from a second simulator serving the same organization with
the same rate limit, and posts what it read to a second receiver.

Warm-up, excluded from every figure: the scheduler's start-up (the runs until every stream has been
asked for once, a few runs at full budget for 1,000 streams, as each stream needs a first read)
and then ``--settle`` seconds (default six intervals: a lap of the cold turns at the default
revisit bound), so the span sees the steady state a long-running installation is in. Measured: the
records created in the ``--duration`` seconds after the warm-up, the runs started and the API calls
(every request, 429s included) in those seconds; then the runs go on (for ``--drain`` seconds at
most) until every measured record has arrived. A record that never arrives counts as infinitely
late.
Sizes: ``--streams`` (2/5 users, 3/5 domains: 1,000 is 400 users and 600 domains). With
``--org-wide`` the simulator answers a name-less ``object_type=user``/``domain`` query with every
user's or domain's records (``audit-forwarder check`` says whether a service does).

    python bench/freshness.py [--streams 100,1000] [--duration 60] [--settle 60] [--interval 10]
    python bench/freshness.py --quick     # a smoke test: 20 streams, 2 s interval, a few seconds
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test receiver lives in tests/

from forwarder.api.bounds import bound
from forwarder.api.ratelimit import TokenBucket
from forwarder.jsonutil import dumps
from forwarder.records import event_id
from forwarder.scheduling.policy import COLD_INTERVALS, DOMAIN_INTERVALS, INDEX_INTERVALS
from forwarder.sim.endpoints import AUDITS_PATH, USERS_PATH
from forwarder.sim.generate import generate_wide_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, LoggedRequest, Simulator
from forwarder.timeutil import now_us
from tests.e2e.helpers import HEC_TOKEN, env_for
from tests.receivers.hec import HecReceiver
from tests.receivers.hec import event_id as envelope_id

ROOT = Path(__file__).resolve().parents[1]
SKIPPED, DONE = 75, (0, 3, 4)  # exit statuses: lease held; completed (quarantine and future flags too)
PAGE = 200
EVENT_PATH = "/services/collector/event"
TOKEN_PATH = "/v1/ep/token"


@dataclass(frozen=True)
class Scenario:
    users: int
    domains: int
    interval: float
    max_rps: float
    active: float
    dmarc: float
    rate: float
    org_wide: bool
    duration: float
    settle: float
    drain: float
    seed: int

    @property
    def active_users(self) -> int:
        return max(1, round(self.users * self.active))


class ArrivalLog(HecReceiver):
    """A HEC receiver that keeps only when each event id first arrived, and how many came again."""

    def __init__(self) -> None:
        super().__init__(token=HEC_TOKEN)
        self.arrived: Dict[str, float] = {}  # event id -> wall-clock seconds
        self.again = 0

    def answer(self, method: str, target: str, headers: Dict[str, str], raw: bytes) -> Any:
        reply = super().answer(method, target, headers, raw)
        at = time.time()
        for item in self.take_events():
            key = envelope_id(item.envelope)
            if key is None:
                continue
            with self.lock:
                if key in self.arrived:
                    self.again += 1
                else:
                    self.arrived[key] = at
        return reply


@dataclass(frozen=True)
class Created:
    id: str
    at: float  # wall-clock seconds
    streams: Tuple[Tuple[str, str], ...]  # (object_type, name) of the trails holding it


class Activity:
    """Records created over real time by the active users, logged as they are made."""

    def __init__(self, sim: Simulator, scenario: Scenario) -> None:
        self.org = sim.org
        self.rng = random.Random(scenario.seed)
        self.actors = self.rng.sample(self.org.users, scenario.active_users)
        self.rate = scenario.rate
        self.dmarc = scenario.dmarc
        self.log: List[Created] = []
        self.lock = threading.Lock()  # the log: the oracle reads it while records are made
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="activity", daemon=True)

    def _run(self) -> None:
        while not self.stopped.wait(self.rng.expovariate(self.rate)):
            actor = self.rng.choice(self.actors)
            domain = self.rng.choice(self.org.domains) if self.rng.random() < self.dmarc else None
            record = self.org.add_action(now_us(), actor, domain)
            streams = (("user", actor.email),) + ((("domain", domain.name),) if domain else ())
            created = Created(event_id(record), time.time(), streams)
            with self.lock:
                self.log.append(created)

    def since(self, start: float, end: float = math.inf) -> List[Created]:
        with self.lock:
            return [c for c in self.log if start <= c.at < end]


@dataclass
class Run:
    started: float  # the tick it was started at (time.monotonic())
    process: subprocess.Popen[bytes]
    stderr: Path
    code: Optional[int] = None
    ended: float = 0.0


class Cron:
    """``audit-forwarder run`` started every tick, as cron starts it: whether the last one ended or not."""

    def __init__(self, env: Dict[str, str], logs: Path) -> None:
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("FORWARDER_")}, **env}
        self.logs = logs
        self.runs: List[Run] = []

    def start(self, tick: float) -> None:
        stderr = self.logs / f"run-{len(self.runs) + 1}.stderr"
        with stderr.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "forwarder", "run", "--quiet"],
                env=self.env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=out,
            )
        self.runs.append(Run(tick, process, stderr))

    def reap(self) -> None:
        for run in self.runs:
            if run.code is None and run.process.poll() is not None:
                run.code, run.ended = run.process.returncode, time.monotonic()

    def stop(self) -> None:
        """SIGTERM to the runs still going (each commits what it shipped and releases its lease)."""
        running = [run for run in self.runs if run.code is None]
        for run in running:
            run.process.send_signal(signal.SIGTERM)
        for run in running:
            try:
                run.process.wait(30)
            except subprocess.TimeoutExpired:
                run.process.kill()
                run.process.wait()
            run.code = None  # cut by the end of the bench, whatever it then answered


class Oracle:
    """The ideal poller: at each tick, only the streams holding records it has not delivered,
    oldest pending first, each request after a token of its own bucket."""

    def __init__(self, sim: Simulator, hec: ArrivalLog, activity: Activity, rate: float) -> None:
        self.sim, self.hec, self.activity = sim, hec, activity
        self.bucket = TokenBucket(rate)
        self.api = requests.Session()
        self.sink = requests.Session()
        self.delivered: Set[str] = set()
        self.ticks: queue.Queue[Optional[float]] = queue.Queue()
        self.ticked: List[float] = []  # each tick served (time.monotonic())
        self.failed: Optional[Exception] = None
        self.thread = threading.Thread(target=self._run, name="oracle", daemon=True)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        while True:
            self.bucket.take()
            reply = self.api.request(method, self.sim.base_url + path, timeout=30, **kwargs)
            if reply.status_code != 429:
                reply.raise_for_status()
                return reply.json()
            time.sleep(float(reply.headers.get("Retry-After", "1")))

    def start(self) -> None:
        form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
        token = self._call("POST", TOKEN_PATH, data=form)["access_token"]
        self.api.headers["Authorization"] = f"Bearer {token}"
        self.thread.start()

    def _run(self) -> None:
        try:
            while (tick := self.ticks.get()) is not None:
                self.ticked.append(tick)
                self.poll()
        except Exception as exc:  # reported by stop(): a dead oracle must not pass for a slow one
            self.failed = exc

    def poll(self) -> None:
        pending: Dict[Tuple[str, str], float] = {}
        for created in self.activity.since(0):
            for stream in created.streams if created.id not in self.delivered else ():
                pending[stream] = min(created.at, pending.get(stream, math.inf))
        records: List[Any] = []
        for (object_type, name), oldest in sorted(pending.items(), key=lambda item: item[1]):
            start = bound(int(oldest * 1_000_000))
            for offset in range(0, 100 * PAGE, PAGE):
                query = {"object_type": object_type, "name": name, "start_date": start}
                query.update(sort="created_at ASC", limit=str(PAGE), offset=str(offset))
                page = self._call("GET", AUDITS_PATH, params=query)["audits"]
                records += [r for r in page if event_id(r) not in self.delivered]
                if len(page) < PAGE:
                    break
        fresh = {event_id(r): r for r in records}
        if fresh:
            body = b"\n".join(dumps({"event": {"event": {"id": i}, "raw": r}}) for i, r in fresh.items())
            headers = {"Authorization": f"Splunk {self.hec.token}"}
            self.sink.post(
                self.hec.http_url + EVENT_PATH, data=body, headers=headers, timeout=30
            ).raise_for_status()
            self.delivered.update(fresh)

    def stop(self) -> None:
        self.ticks.put(None)
        self.thread.join()
        if self.failed is not None:
            raise SystemExit(f"the oracle failed: {self.failed!r}")


@dataclass
class Figures:
    """One side's account of the measured span."""

    lags: List[float]  # seconds from creation to arrival, math.inf for a record that never arrived
    calls: Counter[str] = field(default_factory=Counter)  # requests in the span, by path
    throttled: int = 0  # of them answered 429
    runs: int = 0  # runs (ticks) started in the span

    @property
    def p95(self) -> float:
        return percentile(self.lags, 0.95)

    @property
    def per_run(self) -> float:
        return sum(self.calls.values()) / max(1, self.runs)


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value at least ``share`` of the values do not pass."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def lags(measured: List[Created], hec: ArrivalLog) -> List[float]:
    return [hec.arrived.get(c.id, math.inf) - c.at for c in measured]


def calls_between(sim: Simulator, span: Span) -> Counter[str]:
    """The requests that reached a simulator (stopped: its log no longer grows) in the span, by kind."""
    return Counter(kind(request) for at, request in zip(sim.arrivals, sim.requests) if span.holds(at))


def longest_waits(sim: Simulator, span: Span) -> Dict[str, float]:
    """Per object type, the longest a stream waited in the span between two audits requests naming
    it (the warm-up's last one counts as the first; one still waiting at the span's end counts up to
    it)."""
    polls: Dict[Tuple[str, str], List[float]] = {}
    for at, request in zip(sim.arrivals, sim.requests):
        if request.path == AUDITS_PATH and request.query.get("name") and at < span.end:
            stream = (request.query.get("object_type", "?"), request.query["name"].casefold())
            polls.setdefault(stream, []).append(at)
    waits: Dict[str, float] = {}
    for (object_type, _), times in polls.items():
        ends = [*times, span.end]
        longest = max((b - a for a, b in zip(ends, ends[1:]) if b >= span.start), default=0.0)
        waits[object_type] = max(waits.get(object_type, 0.0), longest)
    return waits


def kind(request: LoggedRequest) -> str:
    """``audits user``, ``audits domain`` (``org-wide`` without a name), ``users``, ``token``, or the path."""
    if request.path != AUDITS_PATH:
        return {USERS_PATH: "users", TOKEN_PATH: "token"}.get(request.path, request.path)
    scope = request.query.get("object_type", "?") if request.query.get("name") else "org-wide"
    return f"audits {scope}"


class Coverage:
    """Which streams the forwarder has asked the simulator for (an audits request naming them), read
    from the simulator's request log as it grows: start-up is over once every stream was asked for."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.left = {("user", u.email.casefold()) for u in sim.org.users}
        self.left |= {("domain", d.name.casefold()) for d in sim.org.domains}
        self._read = 0  # requests of the log looked at

    def complete(self) -> bool:
        log = self.sim.requests
        end = len(log)  # the log only grows: the entries before ``end`` stay as they are
        for request in log[self._read : end]:
            if request.path == AUDITS_PATH:
                query = request.query
                self.left.discard((query.get("object_type", ""), query.get("name", "").casefold()))
        self._read = end
        return not self.left


@dataclass
class Warmup:
    """The seconds excluded from the figures: start-up (until every stream was asked for) and the
    settling after it."""

    began: float  # time.monotonic()
    covered: float = math.inf  # when the last stream was first asked for
    runs: int = 0  # runs started by then


@dataclass
class Span:
    """The measured seconds: from the end of the warm-up, ``duration`` long."""

    start: float = 0.0  # time.monotonic()
    end: float = 0.0
    wall: Tuple[float, float] = (0.0, 0.0)  # the same in wall-clock seconds, for the records' times
    throttled: Tuple[int, int] = (0, 0)  # 429s in the span: the forwarder's simulator, the oracle's

    def holds(self, at: float) -> bool:
        return self.start <= at < self.end


def schedule_interval(scenario: Scenario) -> int:
    """The whole seconds the runs are told they are started every (the setting takes no fraction)."""
    return max(1, round(scenario.interval))


def measure(scenario: Scenario, tmp: Path) -> None:
    org = generate_wide_org(scenario.users, scenario.domains, scenario.seed)
    with contextlib.ExitStack() as stack:
        nameless = "org-wide" if scenario.org_wide else "refuse"
        sim, ideal = (
            stack.enter_context(Simulator(org, max_rps=scenario.max_rps, nameless=nameless)) for _ in "12"
        )
        hec, ideal_hec = (stack.enter_context(ArrivalLog()) for _ in "12")
        env = env_for(sim.base_url, hec.url, str(tmp / "state"), FORWARDER_INITIAL_LOOKBACK="14d")
        env.update(FORWARDER_DOMAINS=",".join(d.name for d in org.domains))
        env.update(FORWARDER_MAX_RPS=f"{scenario.max_rps:g}", FORWARDER_BATCH_EVENTS="500")
        env.update(FORWARDER_LOG_LEVEL="WARNING")
        # The schedule the runs really have: the scheduler sizes its budget and turns to it.
        env.update(FORWARDER_SCHEDULE_INTERVAL=f"{schedule_interval(scenario)}s")
        cron, activity = Cron(env, tmp), Activity(sim, scenario)
        oracle = Oracle(ideal, ideal_hec, activity, scenario.max_rps)
        activity.thread.start()
        oracle.start()
        try:
            warmup, span = drive(scenario, cron, sim, hec, oracle)
        finally:
            activity.stopped.set()
            cron.stop()
            oracle.stop()
    measured = activity.since(*span.wall)
    runs = [run for run in cron.runs if span.holds(run.started)]
    forwarder = Figures(lags(measured, hec), calls_between(sim, span), span.throttled[0], len(runs))
    ideal_runs = sum(1 for at in oracle.ticked if span.holds(at))
    best = Figures(lags(measured, ideal_hec), calls_between(ideal, span), span.throttled[1], ideal_runs)
    report(scenario, warmup, span, cron.runs[0], runs, measured, forwarder, best)
    waits, schedule = longest_waits(sim, span), schedule_interval(scenario)
    print(f"longest wait between two polls of a stream in the span: user streams "
          f"{waits.get('user', 0):.1f} s (FORWARDER_COLD_REVISIT: {COLD_INTERVALS * schedule} s by "
          f"default), domain streams {waits.get('domain', 0):.1f} s (FORWARDER_DOMAIN_REVISIT: "
          f"{DOMAIN_INTERVALS * schedule} s by default)")  # fmt: skip
    if scenario.org_wide:
        print(f"while the org-wide index is trusted, the streams of each object type it is read for are "
              f"backstops (FORWARDER_INDEX_REVISIT: {INDEX_INTERVALS * schedule} s by default)")  # fmt: skip
    made = activity.since(0)
    shipped = sum(1 for c in made if c.id in hec.arrived)
    fetched = sim.audit_records_served
    print(f"whole bench: audit records fetched {fetched} to ship {shipped} of the {len(made)} records "
          f"created; events delivered twice {hec.again}")  # fmt: skip


def drive(
    scenario: Scenario, cron: Cron, sim: Simulator, hec: ArrivalLog, oracle: Oracle
) -> Tuple[Warmup, Span]:
    """Tick every ``interval`` (a run and an oracle poll) through the warm-up and the span, then
    until the span's runs have ended and its records have arrived on both sides, or ``drain`` ends."""
    ideal, activity = oracle.sim, oracle.activity
    coverage = Coverage(sim)
    span: Optional[Span] = None
    tick = time.monotonic()
    warmup = Warmup(tick)
    while True:
        cron.start(tick)
        oracle.ticks.put(tick)
        tick += scenario.interval
        while time.monotonic() < tick:
            time.sleep(min(0.2, max(0.0, tick - time.monotonic())))
            cron.reap()
            first = cron.runs[0]
            if first.code is not None and first.code not in DONE:
                raise SystemExit(f"the first run failed (exit {first.code}):\n{tail(first.stderr)}")
            now = time.monotonic()
            if warmup.covered == math.inf and coverage.complete():
                warmup.covered, warmup.runs = now, len(cron.runs)
            if span is None and now >= warmup.covered + scenario.settle:
                span = Span(now, math.inf, (time.time(), math.inf), (sim.throttled, ideal.throttled))
            elif span is not None and span.end == math.inf and now >= span.start + scenario.duration:
                span.end, span.wall = now, (span.wall[0], time.time())
                span.throttled = (sim.throttled - span.throttled[0], ideal.throttled - span.throttled[1])
                activity.stopped.set()
        if span is None:
            if time.monotonic() - warmup.began > 20 * 60:
                raise SystemExit("start-up has not read every stream in 20 minutes")
        elif span.end < math.inf:
            ended = all(run.code is not None for run in cron.runs if run.started < span.end)
            arrived = all(
                c.id in hec.arrived and c.id in oracle.hec.arrived for c in activity.since(*span.wall)
            )
            if (arrived and ended) or time.monotonic() >= span.end + scenario.drain:
                return warmup, span


def tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def seconds(value: float) -> str:
    return "never (a record did not arrive)" if math.isinf(value) else f"{value:.1f} s"


def report(
    scenario: Scenario,
    warmup: Warmup,
    span: Span,
    first: Run,
    runs: List[Run],
    measured: List[Created],
    forwarder: Figures,
    oracle: Figures,
) -> None:
    s = scenario
    print(f"== {s.users + s.domains} streams ({s.users} users, {s.domains} domains): FORWARDER_MAX_RPS="
          f"{s.max_rps:g}, a run every {s.interval:g} s, {s.rate:g} records/s by {s.active_users} users "
          f"({s.active:.0%}), {s.dmarc:.0%} of them DMARC changes")  # fmt: skip
    if s.org_wide:
        print("the simulator answers name-less (org-wide) queries")
    print(f"warm-up, excluded from the figures below: {span.start - warmup.began:.0f} s: start-up "
          f"(until every stream was asked for) {warmup.covered - warmup.began:.0f} s in {warmup.runs} "
          f"runs (the first took {first.ended - first.started:.1f} s, exit {first.code}), then "
          f"{s.settle:g} s settling")  # fmt: skip
    dmarc = sum(1 for c in measured if len(c.streams) > 1)
    print(f"measured span: {s.duration:g} s, records created: {len(measured)} ({dmarc} DMARC changes)")
    for name, side in (("forwarder", forwarder), ("oracle", oracle)):
        arrived = sum(1 for lag in side.lags if not math.isinf(lag))
        print(f"{name}: delivered {arrived} of {len(measured)}, p95 lag {seconds(side.p95)}, "
              f"median {seconds(percentile(side.lags, 0.5))}, API calls {sum(side.calls.values())} in "
              f"{side.runs} runs = {side.per_run:.1f} per run, 429s seen {side.throttled}")  # fmt: skip
    print(f"p95 lag / oracle's: {forwarder.p95 / oracle.p95:.2f}x")
    print(f"API calls per run / oracle's: {forwarder.per_run / oracle.per_run:.2f}x")
    split = ", ".join(f"{k} {n}" for k, n in sorted(forwarder.calls.items()))
    print(f"forwarder calls by kind: {split}")
    codes = Counter(run.code for run in runs)
    done = sum(codes[c] for c in DONE)
    failed = sum(n for code, n in codes.items() if code is not None and code not in (*DONE, SKIPPED))
    print(f"runs started in the span: {len(runs)}: {done} completed, {codes[SKIPPED]} skipped (lease "
          f"held, exit 75), {failed} failed, {codes[None]} cut at the end")  # fmt: skip


def scenarios(args: argparse.Namespace) -> List[Scenario]:
    out = []
    settle = 6 * args.interval if args.settle is None else args.settle
    for streams in args.streams:
        users = streams * 2 // 5
        out.append(Scenario(users, streams - users, args.interval, args.max_rps, args.active, args.dmarc,
                            args.rate, args.org_wide, args.duration, settle, args.drain,
                            args.seed))  # fmt: skip
    return out


def streams_list(text: str) -> List[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma list of stream counts: {text!r}") from None
    if any(v < 10 for v in values):
        raise argparse.ArgumentTypeError("each size needs at least 10 streams (4 users)")
    return values


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=streams_list, default=[100, 1000], help="sizes (default 100,1000)")
    parser.add_argument("--duration", type=float, default=60, help="measured seconds per size (default 60)")
    parser.add_argument(
        "--settle", type=float, help="seconds of warm-up after start-up (default six intervals)"
    )
    parser.add_argument("--drain", type=float, default=120, help="most seconds to wait for the last records")
    parser.add_argument("--interval", type=float, default=10, help="seconds between runs (default 10)")
    parser.add_argument("--max-rps", type=float, default=20, help="the service's rate limit (default 20)")
    parser.add_argument("--active", type=float, default=0.1, help="share of users active (default 0.1)")
    parser.add_argument("--dmarc", type=float, default=0.3, help="share of DMARC changes (default 0.3)")
    parser.add_argument("--rate", type=float, default=1, help="records made per second (default 1)")
    parser.add_argument("--org-wide", action="store_true", help="the simulator serves name-less queries")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke test: 20 streams, a few seconds")
    args = parser.parse_args(argv)
    if args.quick:
        args.streams, args.duration, args.drain, args.interval, args.settle = [20], 6, 30, 2, 4
    settle = 0 if args.settle is None else args.settle
    if min(args.duration, args.interval, args.max_rps, args.rate) <= 0 or min(args.drain, settle) < 0:
        parser.error(
            "--duration, --interval, --max-rps and --rate must be positive, --drain and --settle not negative"
        )
    if not (0 < args.active <= 1 and 0 <= args.dmarc <= 1):
        parser.error("--active must be in (0, 1] and --dmarc in [0, 1]")
    signal.signal(signal.SIGTERM, stopped)  # as Ctrl-C: the runs started are stopped too
    try:
        for scenario in scenarios(args):
            with tempfile.TemporaryDirectory() as tmp:
                measure(scenario, Path(tmp))
            sys.stdout.flush()
    except KeyboardInterrupt:
        sys.exit(130)


def stopped(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    main()
