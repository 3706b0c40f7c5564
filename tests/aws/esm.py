"""A small stand-in for Lambda's SQS event source mapping, over the moto server.

It keeps ``workers`` worker processes alive (one replaced as soon as it dies, as Lambda would start
another execution environment); each receives a batch from the queue with the mapping's
visibility timeout, invokes ``handlers.aws_worker.handler`` with the event Lambda would send, then
deletes the messages the handler did not list in ``batchItemFailures`` and releases the others
(they come back at once, or after ``release_after`` seconds). A worker killed mid-invocation
deletes and releases nothing: its messages come back when their visibility timeout ends.

Every invocation is logged as ``Invocation`` (pid, message groups, wall-clock start and end), so
tests can check that no two workers ever held one tenant at once.

Receives are short polls taken one at a time under a lock shared by the workers. moto's long poll
decides which message groups are in flight once, when the poll starts, and its server threads do
not serialize receives: two workers could each be handed a message of one group, which SQS FIFO
never does. Lambda's own pollers are not what these tests are about, so the stand-in keeps SQS's
rule exact instead of inheriting moto's race.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Tuple

import boto3


class Invocation(NamedTuple):
    pid: int
    groups: Tuple[str, ...]
    started: float
    ended: float
    outcomes: Tuple[str, ...]


class RealTimeContext:
    """A Lambda context whose remaining time runs with the wall clock."""

    function_name = "forwarder-worker-test"

    def __init__(self, budget_s: float) -> None:
        self._ends = time.monotonic() + budget_s

    def get_remaining_time_in_millis(self) -> int:
        return int((self._ends - time.monotonic()) * 1000)


def lambda_event(messages: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "eventSource": "aws:sqs",
            }
            for m in messages
        ]
    }


def worker_loop(
    queue_url: str, settings: Dict[str, Any], stop: Any, log: Any, ready: Any, receiving: Any
) -> None:
    """One worker process: receive, invoke, delete or release, until told to stop."""
    import logging

    from handlers.aws_worker import handler

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    if settings.get("quiet"):  # metrics lines and logs: a benchmark prints only its table
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the process's life
    sqs = boto3.client("sqs")
    ready.release()  # a warm environment: imports done, client made
    while not stop.is_set():
        with receiving:  # one receive at a time: see the module docstring
            messages = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=settings["batch_size"],
                VisibilityTimeout=settings["visibility_timeout"],
                WaitTimeSeconds=0,
                AttributeNames=["MessageGroupId", "ApproximateReceiveCount"],
            ).get("Messages", [])
        if not messages:
            stop.wait(0.05)  # an idle worker polls 20 times a second, not in a busy loop
            continue
        started = time.time()
        try:
            result = handler(lambda_event(messages), RealTimeContext(settings["budget_s"]))
            failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
            outcomes = tuple(result["outcomes"].get(m["MessageId"], "?") for m in messages)
        except Exception:  # the whole invocation failed: every message comes back
            failed = {m["MessageId"] for m in messages}
            outcomes = ("error",) * len(messages)
        ended = time.time()
        groups = tuple(m["Attributes"]["MessageGroupId"] for m in messages)
        log.put(Invocation(os.getpid(), groups, started, ended, outcomes))
        for m in messages:
            if m["MessageId"] in failed:
                sqs.change_message_visibility(
                    QueueUrl=queue_url,
                    ReceiptHandle=m["ReceiptHandle"],
                    VisibilityTimeout=settings["release_after"],
                )
            else:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])


@dataclass
class EventSourceMapping:
    queue_url: str
    workers: int = 4
    batch_size: int = 1
    visibility_timeout: int = 60
    release_after: int = 0
    budget_s: float = 60.0
    quiet: bool = False

    def __post_init__(self) -> None:
        self._ctx = multiprocessing.get_context("spawn")  # no fork of a process with server threads
        self._stop = self._ctx.Event()
        self._log = self._ctx.Queue()
        self._ready = self._ctx.Semaphore(0)
        self._receiving = self._ctx.Lock()
        self.processes: List[Any] = []
        self.invocations: List[Invocation] = []

    def _start_one(self) -> None:
        settings = {
            "batch_size": self.batch_size,
            "visibility_timeout": self.visibility_timeout,
            "release_after": self.release_after,
            "budget_s": self.budget_s,
            "quiet": self.quiet,
        }
        process = self._ctx.Process(
            target=worker_loop,
            args=(self.queue_url, settings, self._stop, self._log, self._ready, self._receiving),
        )
        process.start()
        self.processes.append(process)

    def _collect(self) -> None:
        while not self._log.empty():
            self.invocations.append(self._log.get())

    def drained(self) -> bool:
        attributes = boto3.client("sqs").get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return all(int(v) == 0 for v in attributes.values())

    def start(self) -> None:
        """Start the workers and wait until each is warm (imports done, polling)."""
        for _ in range(self.workers):
            self._start_one()
        for _ in range(self.workers):
            if not self._ready.acquire(timeout=120):
                raise AssertionError("a worker process did not start")

    def wait_drained(self, limit_s: float = 600.0, every_s: float = 0.2) -> None:
        """Until the queue is empty twice in a row; workers that die are replaced meanwhile."""
        give_up = time.monotonic() + limit_s
        empty = 0
        while empty < 2:
            if time.monotonic() > give_up:
                raise AssertionError(f"the queue did not drain in {limit_s}s")
            self._collect()
            for process in [p for p in self.processes if not p.is_alive()]:
                self.processes.remove(process)
                self._start_one()  # Lambda starts another environment
            empty = empty + 1 if self.drained() else 0
            time.sleep(every_s)

    def stop(self) -> None:
        self._stop.set()
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
        self._collect()

    def run_until_drained(self, limit_s: float = 600.0) -> List[Invocation]:
        self.start()
        try:
            self.wait_drained(limit_s)
        finally:
            self.stop()
        return self.invocations


def overlaps(invocations: List[Invocation]) -> List[Tuple[str, Invocation, Invocation]]:
    """Pairs of invocations of different workers that held the same tenant at the same time."""
    by_group: Dict[str, List[Invocation]] = {}
    for inv in invocations:
        for group in set(inv.groups):
            by_group.setdefault(group, []).append(inv)
    found = []
    for group, runs in by_group.items():
        runs.sort(key=lambda i: i.started)
        for a, b in zip(runs, runs[1:]):
            if b.started < a.ended:
                found.append((group, a, b))
    return found
