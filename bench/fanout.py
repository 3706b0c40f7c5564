"""Fan-out wall time with 1, 2, 4 and 8 workers against the ideal (one worker's time / workers).

Everything runs here over loopback: a moto server (SQS FIFO, DynamoDB, S3), one platform simulator
per tenant answering every request after ``--latency`` seconds, the test HEC receiver, and the event
source mapping stand-in of tests/aws/esm.py with warm worker processes. Each round plans one cycle
(the planner handler), then times until the queue is drained. The floor is the same run with one
worker, measured in the same session; the goal is 8 workers within 1.3x of its eighth.

    python bench/fanout.py [--tenants 32] [--streams 10] [--latency 0.2] [--workers 1,2,4,8]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import boto3
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test helpers live in tests/

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import org_secret, organizations
from handlers import aws_planner
from tests.aws.esm import EventSourceMapping
from tests.e2e.helpers import HEC_TOKEN
from tests.receivers import hec as hec_receiver
from tests.receivers.hec import HecReceiver


def aws_environment(url: str) -> None:
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }
    )


def moto_process() -> subprocess.Popen[bytes]:
    """A moto server in a process of its own (the simulators and the receiver share this one's
    interpreter lock), on a free loopback port; the environment points boto3 at it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            requests.get(f"{url}/moto-api/data.json", timeout=1)
            break
        except requests.ConnectionError:
            time.sleep(0.05)
    aws_environment(url)
    return server


def setup_round(n: int, sims, streams: int, hec_url: str) -> str:
    """A fresh table, queue and tenants document; the environment set; returns the queue URL."""
    tenants = [
        {
            "name": f"org{i}",
            "api_url": sim.base_url,
            "client_id": f"org-{i}",
            "client_secret": org_secret(i),
            "users": [u.email for u in sim.org.users[:2]]
            + [f"idle{k}@org{i}.example" for k in range(streams - 2)],
            "object_types": ["user"],
            "hec_index": f"idx{i}",
        }
        for i, sim in enumerate(sims)
    ]
    table = f"bench-{n}"
    boto3.client("dynamodb").create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    url = boto3.client("sqs").create_queue(
        QueueName=f"bench-{n}.fifo", Attributes={"FifoQueue": "true", "VisibilityTimeout": "300"}
    )["QueueUrl"]
    doc = Path(os.environ["BENCH_DIR"]) / f"tenants-{n}.json"
    doc.write_text(json.dumps({"tenants": tenants}))
    os.environ.update(
        {
            "FORWARDER_TENANTS": str(doc),
            "FORWARDER_STATE": f"dynamodb://{table}",
            "FORWARDER_QUARANTINE": str(Path(os.environ["BENCH_DIR"]) / "quarantine"),
            "FORWARDER_SINK": hec_url,
            "FORWARDER_SINK_TOKEN": HEC_TOKEN,
            "FORWARDER_QUEUE_URL": url,
            "FORWARDER_SHARD_SIZE": str(streams),
            "FORWARDER_INITIAL_LOOKBACK": "13mo",
            "FORWARDER_CONCURRENCY": "1",  # one request at a time per worker: latency-bound
            "FORWARDER_LOG_LEVEL": "ERROR",
            "FORWARDER_TENANT_CONCURRENCY": "16",  # the planner queues every tenant at once
        }
    )
    return url


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=32)
    parser.add_argument("--streams", type=int, default=10, help="streams per tenant (one shard each)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated API request")
    parser.add_argument("--workers", default="1,2,4,8")
    args = parser.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",")]

    import tempfile

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    hec_receiver._Handler.disable_nagle_algorithm = True  # type: ignore[attr-defined]
    server = moto_process()
    orgs = [generate_org(900 + i) for i in range(args.tenants)]
    results: Dict[int, Dict[str, float]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        organizations(orgs) as sims,
        HecReceiver(token=HEC_TOKEN) as hec,
    ):
        os.environ["BENCH_DIR"] = tmp
        for sim in sims:
            sim.latency_seconds = args.latency
        accepted = [0]  # sink requests accepted so far, over every round
        hec.after_accept = lambda count: accepted.__setitem__(0, count)
        for n, workers in enumerate(counts):
            url = setup_round(n, sims, args.streams, hec.url)
            for sim in sims:
                sim.requests.clear()
            mapping = EventSourceMapping(url, workers=workers, budget_s=600, quiet=True)
            mapping.start()  # warm environments, as Lambda keeps them
            try:
                started = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):  # the planner's metrics lines
                    aws_planner.handler({}, None)
                mapping.wait_drained(every_s=0.05)
                wall = time.perf_counter() - started
            finally:
                mapping.stop()
            results[workers] = {
                "wall": wall,
                "invocations": len(mapping.invocations),
                "api_calls": sum(len(sim.requests) for sim in sims),
                "sink_requests": accepted[0] - sum(r["sink_requests"] for r in results.values()),
            }
    server.terminate()
    server.wait(timeout=30)

    floor = results[counts[0]]["wall"] * counts[0]
    streams = args.tenants * args.streams
    print(
        f"fan-out: {args.tenants} tenants x {args.streams} streams = {streams} streams, "
        f"{args.latency * 1000:.0f} ms per API request, shard = {args.streams} streams"
    )
    header = ("workers", "wall s", "ideal s", "ratio", "invocations", "API calls", "sink reqs")
    print("{:>7} {:>8} {:>8} {:>6} {:>11} {:>9} {:>9}".format(*header))
    for workers, r in results.items():
        ideal = floor / workers
        print(
            f"{workers:>7} {r['wall']:>8.2f} {ideal:>8.2f} {r['wall'] / ideal:>6.2f} "
            f"{r['invocations']:>11.0f} {r['api_calls']:>9.0f} {r['sink_requests']:>9.0f}"
        )


if __name__ == "__main__":
    main()
