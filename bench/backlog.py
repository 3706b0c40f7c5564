"""The pull engine on a deep backlog and on an idle run, against floors measured in the same run.

The simulator serves one user stream of ``--records`` records (enveloped, limit/offset paging, sort
and start_date honoured) plus the generated organization; the HEC test receiver is the sink. Each
contender runs in its own child process (the servers stay in this one), so its peak RSS is its own:

* backlog: ``run_once`` over the deep stream from an empty state, against a bare fetch+post floor
  (plain ``requests``: the same pages, oldest first, 200 per request, each posted to the receiver).
  Prints audits calls / minimum pages, wall / floor, HEC requests and the forwarder's peak RSS.
* idle: every user and domain stream once delivered, then a run with nothing new, against a floor
  of one plain audits GET per stream with the same concurrency. Prints audits calls per stream and
  latency / floor.

* unordered: the bare, unordered, unpaged service style over the generated organization: failed
  streams and audits calls per stream and pass.

Both timed cases measure ``--pairs`` (floor, run) pairs back to back and report the pair whose
ratio is the median, with the range and every pair's ratio.

    python bench/backlog.py [--records N] [--pairs P] [--case all|backlog|idle|unordered]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test receiver and settings helpers live in tests/

from timing import PAIRS, Pair, median_pair, spread  # noqa: E402

from forwarder import jsonutil  # noqa: E402
from forwarder.app import run_once  # noqa: E402
from forwarder.sim.endpoints import AUDITS_PATH, USERS_PATH  # noqa: E402
from forwarder.sim.entities import ORG_DOMAIN  # noqa: E402
from forwarder.sim.generate import generate_org  # noqa: E402
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator  # noqa: E402
from forwarder.timeutil import now_us  # noqa: E402
from tests.e2e.helpers import HEC_TOKEN, settings_for  # noqa: E402
from tests.receivers.hec import HecReceiver  # noqa: E402

DEEP_USER = "deep.backlog@" + ORG_DOMAIN
PAGE = 200


# -- the contenders, each run in a child process ------------------------------------------------------


def _token(api: str) -> str:
    form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
    return str(requests.post(api + "/v1/ep/token", data=form, timeout=30).json()["access_token"])


def floor_backlog(api: str, hec: str, user: str) -> None:
    """Fetch every page oldest-first and post each page's records to HEC: the least any forwarder does."""
    session = requests.Session()
    auth = {"Authorization": f"Bearer {_token(api)}"}
    post_headers = {"Authorization": f"Splunk {HEC_TOKEN}"}
    offset = 0
    while True:
        params: Dict[str, Any] = {"object_type": "user", "name": user, "sort": "created_at ASC"}
        params.update(limit=PAGE, offset=offset)
        page = session.get(api + AUDITS_PATH, params=params, headers=auth, timeout=30).json()["audits"]
        if page:
            body = b"".join(jsonutil.dumps({"event": record}) for record in page)
            session.post(hec + "/services/collector/event", data=body, headers=post_headers, timeout=30)
        if len(page) < PAGE:
            return
        offset += len(page)


def floor_idle(api: str, names: List[List[str]], concurrency: int) -> None:
    """One audits GET per stream (with the users list first), ``concurrency`` at a time."""
    session = requests.Session()
    auth = {"Authorization": f"Bearer {_token(api)}"}
    session.get(api + USERS_PATH, headers=auth, timeout=30).raise_for_status()

    def one(stream: List[str]) -> None:
        params = {"object_type": stream[0], "name": stream[1], "limit": PAGE, "offset": 0}
        session.get(api + AUDITS_PATH, params=params, headers=auth, timeout=30).raise_for_status()

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, names))


def forwarder_run(api: str, hec: str, state: str, extra: Dict[str, str]) -> Dict[str, Any]:
    report = run_once(settings_for(api, hec, state, **extra))
    return report.to_dict()


def child(args: argparse.Namespace) -> None:
    spec = json.loads(args.child)
    start = time.perf_counter()
    result: Any = None
    if spec["role"] == "floor-backlog":
        floor_backlog(spec["api"], spec["hec"], spec["user"])
    elif spec["role"] == "floor-idle":
        floor_idle(spec["api"], spec["names"], spec["concurrency"])
    else:
        result = forwarder_run(spec["api"], spec["hec"], spec["state"], spec["env"])
    wall = time.perf_counter() - start
    rss_mb = peak_rss_mb()
    print(json.dumps({"wall": wall, "rss_mb": rss_mb, "report": result}))


def peak_rss_mb() -> float:
    """This process's peak resident set. Linux's VmHWM belongs to the process image; ru_maxrss
    would also count the parent's pages the child shared before exec (the servers' data)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def spawn(spec: Dict[str, Any]) -> Dict[str, Any]:
    # Bytecode caches as an installed copy has them (pip compiles on install): a machine with
    # PYTHONDONTWRITEBYTECODE would otherwise compile the run's lazily imported modules (the state
    # store, the sink) inside the timed window of every run, a cost no deployment pays each run.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


# -- the measurements -----------------------------------------------------------------------------------


def backlog(records: int, count: int) -> None:
    org = generate_org(7)
    org.add_deep_stream(DEEP_USER, records, now_us())
    env = {
        "FORWARDER_USERS": DEEP_USER,
        "FORWARDER_OBJECT_TYPES": "user",
        "FORWARDER_BATCH_EVENTS": "",
        "FORWARDER_LOG_LEVEL": "WARNING",
    }
    minimum = records // PAGE + 1  # the last page is short (or empty)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec:
        floor_spec = {"role": "floor-backlog", "api": sim.base_url, "hec": hec.http_url, "user": DEEP_USER}
        pairs: List[Pair[Dict[str, Any]]] = []
        floors = []
        for _ in range(count):
            floor_result = spawn(floor_spec)
            hec.forget_events()
            with tempfile.TemporaryDirectory() as tmp:
                calls_before, hec_before = sim.calls(), len(hec.seen())
                spec = {"role": "run", "api": sim.base_url, "hec": hec.url, "state": tmp + "/s", "env": env}
                result = spawn(spec)
                result["calls"] = sim.calls() - calls_before
                result["hec"] = len(hec.seen()) - hec_before
            hec.forget_events()
            floors.append(floor_result)
            pairs.append(Pair(floor_result["wall"], result["wall"], result))
        median = median_pair(pairs)
        stream = median.run["report"]["streams"][0]
    calls = max(pair.run["calls"] for pair in pairs)
    print(f"backlog: one stream of {records:,} records, {PAGE} per page (minimum {minimum} audits calls)")
    print(
        f"  shipped {stream['shipped']:,} in {stream['passes']} passes,",
        f"strategy {stream.get('strategy', '-')}",
    )
    print(f"  audits calls:  {calls:>8}   / minimum pages   {calls / minimum:6.2f}x", end="")
    print(f"   (most of {len(pairs)} runs)")
    print(f"  wall:          {median.run_s:>8.2f}s  / bare floor {median.floor_s:5.2f}s", end="")
    print(f" {median.ratio:6.2f}x  ({spread(pairs)})")
    hec_requests = max(pair.run["hec"] for pair in pairs)
    print(f"  HEC requests:  {hec_requests:>8}   (floor: {minimum - 1} posts of {PAGE})")
    print(
        f"  peak RSS:      {max(pair.run['rss_mb'] for pair in pairs):>8.1f} MB",
        f"(most of {len(pairs)} runs; floor process {min(f['rss_mb'] for f in floors):.1f} MB)",
    )


def idle(count: int) -> None:
    org = generate_org(7)
    domains = ",".join(d.name for d in org.domains if d.destroyed_us is None)
    env = {"FORWARDER_DOMAINS": domains, "FORWARDER_LOG_LEVEL": "WARNING"}
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec, tempfile.TemporaryDirectory() as tmp:
        spec = {"role": "run", "api": sim.base_url, "hec": hec.url, "state": tmp + "/s", "env": env}
        first = spawn(spec)["report"]
        hec.forget_events()
        streams = [s["stream"].split("/", 2) for s in first["streams"]]
        names = [[kind, name] for kind, name, *_ in streams]
        floor_spec = {"role": "floor-idle", "api": sim.base_url, "names": names, "concurrency": 4}
        pairs: List[Pair[Dict[str, Any]]] = []
        for _ in range(count):
            floor_wall = spawn(floor_spec)["wall"]
            before = sim.calls()
            result = spawn(spec)
            result["calls"] = sim.calls() - before
            pairs.append(Pair(floor_wall, result["wall"], result))
        median = median_pair(pairs)
    shipped = median.run["report"]["totals"]["shipped"]
    calls = max(pair.run["calls"] for pair in pairs)
    print(f"idle run: {len(names)} streams already delivered, nothing new (shipped {shipped})")
    print(f"  audits calls per stream: {calls / len(names):6.2f}   (most of {len(pairs)} runs; goal <= 1)")
    print(f"  latency:  {median.run_s:6.3f}s / floor {median.floor_s:6.3f}s = {median.ratio:5.2f}x", end="")
    print(f"   (goal <= 1.3x)  ({spread(pairs)})")


def unordered() -> None:
    """The bare, unordered, unpaged service: the whole trail as a list, a new order on each call."""
    org = generate_org(5)
    domains = ",".join(d.name for d in org.domains if d.destroyed_us is None)
    # Pages of 50: most trails are longer than a page, which the service ignores.
    env = {"FORWARDER_DOMAINS": domains, "FORWARDER_LOG_LEVEL": "ERROR", "FORWARDER_PAGE_LIMIT": "50"}
    sim, hec = Simulator.unordered(org), HecReceiver(token=HEC_TOKEN)
    with sim, hec, tempfile.TemporaryDirectory() as tmp:
        spec = {"role": "run", "api": sim.base_url, "hec": hec.url, "state": tmp + "/s", "env": env}
        report = spawn(spec)["report"]
        calls = sim.calls()
    streams = report["streams"]
    passes = sum(s.get("passes", 1) for s in streams)
    failed = sum(1 for s in streams if s["error"])
    print(f"unordered unpaged service: {len(streams)} streams, {failed} failed", report["error"] or "")
    print(f"  audits calls: {calls} for {passes} passes ({calls / passes:.2f} per stream and pass)")


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument(
        "--pairs", type=int, default=PAIRS, help="back-to-back (floor, run) pairs per timed case"
    )
    parser.add_argument("--case", choices=("all", "backlog", "idle", "unordered"), default="all")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return
    if args.case in ("all", "backlog"):
        backlog(args.records, args.pairs)
    if args.case in ("all", "idle"):
        idle(args.pairs)
    if args.case in ("all", "unordered"):
        unordered()


if __name__ == "__main__":
    main()
