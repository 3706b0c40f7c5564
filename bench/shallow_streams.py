"""Thousands of shallow streams: sink requests per run against ``ceil(events / batch)``.

The simulator serves ``--users`` users with ``--records`` recent logins each; one forwarder run ships
them to the loopback HEC test receiver. Printed: HEC event requests against the minimum
``ceil(events / 500)``; the run's API calls against the floor's; and the run's wall time against
a floor measured in the same run: what any forwarder must at least do, over one keep-alive session
per peer as the forwarder keeps (a token, the users list, one audits GET per user,
``FORWARDER_CONCURRENCY`` at a time, then the minimum number of HEC posts of prebuilt bodies).
``--pairs`` (floor, run) pairs are measured back to back, each run from an empty state: the wall
ratio is the median pair's, with the range; the counts are each run's own (every run makes the
same ones, or the bench says otherwise). An untimed floor first warms the simulator, whose views of
the trails the first pair's floor would otherwise build alone. Then an idle run's requests, and the
state a run from an empty state writes: stream commits, and the writes and bytes of the
delivered-ids index (DESIGN §2, Overlap). With ``--aws``, the same run against the moto server's S3
and Firehose: objects written and PutRecordBatch calls (moto's delivery stream writes one object per
call).

    python bench/shallow_streams.py [--users 2000] [--records 3] [--pairs 3] [--aws]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test receiver lives in tests/

from timing import PAIRS, Pair, median_pair, spread

from forwarder.api import token
from forwarder.app import run_once
from forwarder.config import load_settings
from forwarder.jsonutil import dumps
from forwarder.report import RunReport
from forwarder.sim.endpoints import AUDITS_PATH, USERS_PATH
from forwarder.sim.generate import generate_shallow_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from forwarder.state import delivered
from forwarder.state.local import LocalStore
from forwarder.streams import user_email
from tests.e2e.helpers import HEC_TOKEN, env_for
from tests.receivers.hec import HecReceiver

BATCH = 500
PAGE = 200  # FORWARDER_PAGE_LIMIT's default, the documented maximum
CONCURRENCY = 4
EVENT_PATH = "/services/collector/event"


def run_env(api_url: str, sink: str, state: str) -> Dict[str, str]:
    batching = {"FORWARDER_BATCH_EVENTS": str(BATCH), "FORWARDER_CONCURRENCY": str(CONCURRENCY)}
    return env_for(api_url, sink, state, FORWARDER_INITIAL_LOOKBACK="2d", **batching)


def timed_run(env: Dict[str, str]) -> tuple[RunReport, float]:
    start = time.perf_counter()
    report = run_once(load_settings(env))
    elapsed = time.perf_counter() - start
    if not report.ok:
        failed = [s.error for s in report.streams if s.error][:3]
        raise SystemExit(f"the run failed: {report.error or failed}")
    return report, elapsed


def floor(sim: Simulator, hec: HecReceiver) -> Tuple[float, int]:
    """What any forwarder must at least do, over one keep-alive session per peer as the forwarder
    keeps: a token, the users list page by page, one audits GET per user (CONCURRENCY at a time),
    then ceil(events / 500) posts of prebuilt HEC bodies. Returns its seconds and its API calls."""
    start = time.perf_counter()
    api = requests.Session()  # shared by the fetching threads, as the forwarder's client shares one
    form = {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
    token = api.post(sim.base_url + "/v1/ep/token", data=form, timeout=30).json()["access_token"]
    api.headers["Authorization"] = f"Bearer {token}"
    calls = 1

    def listed(path: str, key: str, params: Dict[str, Any]) -> List[Any]:
        reply = api.get(sim.base_url + path, params=params, timeout=30)
        reply.raise_for_status()
        body = reply.json()
        return list(body.get(key, []) if isinstance(body, dict) else body)

    users: List[str] = []
    while True:  # a full page cannot tell it was the last: one more call must come back short
        page = listed(USERS_PATH, "users", {"limit": PAGE, "offset": len(users)})
        calls += 1
        users.extend(email for email in map(user_email, page) if email)
        if len(page) < PAGE:
            break

    def fetch(name: str) -> List[Any]:
        return listed(
            AUDITS_PATH, "audits", {"object_type": "user", "name": name, "limit": PAGE, "offset": 0}
        )

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        records = [r for trail in pool.map(fetch, users) for r in trail]
    calls += len(users)
    sink = requests.Session()
    post_headers = {"Authorization": f"Splunk {hec.token}"}
    for i in range(0, len(records), BATCH):
        body = b"\n".join(json.dumps({"event": r}).encode() for r in records[i : i + BATCH])
        sink.post(hec.http_url + EVENT_PATH, data=body, headers=post_headers, timeout=30).raise_for_status()
    return time.perf_counter() - start, calls


def count_aws(sim: Simulator, tmp: str) -> None:
    """The run again to S3 and to Firehose on a moto server: objects and calls against the minimum."""
    import os

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{server._server.server_port}"  # type: ignore[union-attr]
    keys = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    os.environ.update(zip(keys, (url, "testing", "testing", "us-east-1")))
    try:
        s3 = boto3.client("s3")
        for bucket in ("bench-s3", "bench-firehose"):
            s3.create_bucket(Bucket=bucket)
        boto3.client("firehose").create_delivery_stream(
            DeliveryStreamName="bench",
            ExtendedS3DestinationConfiguration={
                "RoleARN": "arn:aws:iam::123456789012:role/firehose",
                "BucketARN": "arn:aws:s3:::bench-firehose",
            },
        )
        for sink, bucket, what in (("s3://bench-s3/audit", "bench-s3", "S3 objects"),
                                   ("firehose://bench", "bench-firehose", "Firehose calls")):  # fmt: skip
            report, _ = timed_run(run_env(sim.base_url, sink, f"{tmp}/{bucket}"))
            pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            objects = sum(len(page.get("Contents", [])) for page in pages)
            events = report.totals()["shipped"]
            print(f"{what}: {objects}, minimum ceil(events/{BATCH}) = {math.ceil(events / BATCH)}")
    finally:
        server.stop()


@dataclass
class Counted:
    """What one run from an empty state did, counted at the simulator and at the receiver."""

    report: RunReport
    hec_requests: int  # event posts
    api_calls: Counter[str]  # requests by path
    floor_calls: int  # the API calls of the floor measured just before it


def pair(sim: Simulator, hec: HecReceiver, state: str) -> Pair[Counted]:
    """A floor, then a forwarder run from an empty ``state``, back to back."""
    floor_s, floor_calls = floor(sim, hec)
    with token._reusable_lock:  # each run as a new process's: it asks for a token, as the floor does
        token._reusable.clear()
    before, api_before = len(hec.seen()), len(sim.requests)
    report, run_s = timed_run(run_env(sim.base_url, hec.url, state))
    hec_requests = sum(1 for seen in hec.seen()[before:] if seen.path.startswith(EVENT_PATH))
    api_calls = Counter(r.path for r in sim.requests[api_before:])
    return Pair(floor_s, run_s, Counted(report, hec_requests, api_calls, floor_calls))


class CountedSlot:
    """A store document whose writes are counted, with their bytes."""

    def __init__(self, slot: Any) -> None:
        self._slot, self.location = slot, slot.location
        self.puts = self.bytes = self.size = 0

    def read(self) -> Any:
        return self._slot.read()

    def put(self, doc: Dict[str, Any], expected: Optional[str]) -> str:
        self.puts += 1
        self.size = len(dumps(doc))
        self.bytes += self.size
        return self._slot.put(doc, expected)

    def delete(self, expected: str) -> None:
        self._slot.delete(expected)


class CountedStore(LocalStore):
    """A local store that counts stream commits and the writes of the documents beside them."""

    def __init__(self, directory: str) -> None:
        super().__init__(directory)
        self.commits = 0
        self.slots: Dict[str, CountedSlot] = {}

    def commit(self, key: str, state: Any, version: Optional[str]) -> str:
        self.commits += 1
        return super().commit(key, state, version)

    def slot(self, name: str) -> Any:
        return self.slots.setdefault(name, CountedSlot(super().slot(name)))


def state_writes(sim: Simulator, hec: HecReceiver, state: str) -> str:
    store = CountedStore(state)
    report = run_once(load_settings(run_env(sim.base_url, hec.url, state)), store=store)
    index = store.slots[delivered.SLOT]
    return (
        f"state writes of a run from an empty state: {store.commits} stream commits; the delivered-ids "
        f"index {index.puts} writes, {index.bytes / 1024:.0f} KB in all, {index.size / 1024:.0f} KB at the "
        f"end ({report.totals()['shipped']} events shipped)"
    )


def counted(values: List[int]) -> str:
    """A count every run made alike, or the most and the fewest: a count that varies is a finding."""
    most, fewest = max(values), min(values)
    return f"{most}" if most == fewest else f"{most} (most of {len(values)} runs; fewest {fewest})"


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--records", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=PAIRS, help="back-to-back (floor, run) pairs")
    parser.add_argument("--aws", action="store_true", help="also count S3 objects and Firehose calls")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")

    org = generate_shallow_org(args.users, args.records)
    with Simulator(org) as sim, HecReceiver(token=HEC_TOKEN) as hec, tempfile.TemporaryDirectory() as tmp:
        floor(sim, hec)  # untimed: the simulator builds its views of the trails once, for no pair's floor
        pairs = [pair(sim, hec, f"{tmp}/state-{n}") for n in range(args.pairs)]
        before = len(hec.seen())
        _, idle_s = timed_run(run_env(sim.base_url, hec.url, f"{tmp}/state-0"))  # nothing new
        idle_requests = len(hec.seen()) - before
        writes = state_writes(sim, hec, f"{tmp}/state-writes")
        if args.aws:
            count_aws(sim, tmp)
    print_figures(args, pairs)
    print(f"idle run (nothing new): {idle_requests} HEC requests, wall {idle_s:.2f} s")
    print(writes)


def print_figures(args: argparse.Namespace, pairs: List[Pair[Counted]]) -> None:
    runs = [p.run for p in pairs]
    median = median_pair(pairs)
    events = median.run.report.totals()["shipped"]
    minimum = math.ceil(events / BATCH)
    shipped = counted([run.report.totals()["shipped"] for run in runs])
    print(f"streams: {len(median.run.report.streams)}, events shipped: {shipped}", end="")
    print(f" (expected {args.users * args.records}), {len(runs)} runs from an empty state")
    posts = [run.hec_requests for run in runs]
    print(f"HEC requests: {counted(posts)}, minimum ceil(events/{BATCH}) = {minimum}")
    print(f"requests / minimum: {max(posts) / max(1, minimum):.2f}x (goal: <= minimum + 5)")
    calls = [sum(run.api_calls.values()) for run in runs]
    most = runs[calls.index(max(calls))].api_calls
    floor_calls = max(run.floor_calls for run in runs)
    print(f"API calls: {counted(calls)} ({', '.join(f'{path} {n}' for path, n in sorted(most.items()))})")
    print(f"minimum API calls (the floor's: token, user pages, one GET per user): {floor_calls}")
    print(f"API calls / minimum: {max(calls) / floor_calls:.2f}x")
    print(f"wall: {median.run_s:.2f} s, floor (those calls + minimum posts, keep-alive sessions): ", end="")
    print(f"{median.floor_s:.2f} s (the median pair)")
    print(f"wall / floor: {median.ratio:.2f}x ({spread(pairs)})")


if __name__ == "__main__":
    main()
