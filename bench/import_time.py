"""Cold-start cost of the Lambda handler: the time to import ``handlers.aws_lambda`` in a fresh
interpreter, against a bare ``import boto3`` measured in the same run (each in its own process, so
nothing is cached in ``sys.modules``; the OS file cache is warm for both alike).

Also measured: the handler plus what its first S3/DynamoDB run imports (boto3 and the stores), which
is what a cold invocation pays in total before its first request.

    python bench/import_time.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES: Dict[str, str] = {
    "import boto3": "import boto3",
    "import handlers.aws_lambda": "import handlers.aws_lambda",
    "handler + stores (boto3)": "import handlers.aws_lambda, forwarder.state.dynamodb, forwarder.state.s3",
}
_PROBE = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


def measure(stmt: str, runs: int) -> List[float]:
    env = {**os.environ, "PYTHONPATH": ROOT, "PYTHONDONTWRITEBYTECODE": "1"}
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _PROBE.format(stmt=stmt)],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
        ).stdout
        times.append(float(out.strip().splitlines()[-1]))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh interpreters per case (default 9)")
    args = parser.parse_args()
    measure("import boto3", 1)  # warm the file cache once so the first case is not penalised
    medians = {name: statistics.median(measure(stmt, args.runs)) for name, stmt in CASES.items()}
    base = medians["import boto3"]
    print(f"cold import, median of {args.runs} fresh interpreters ({sys.version.split()[0]}):")
    for name, seconds in medians.items():
        print(f"  {name:<28} {seconds * 1000:8.1f} ms   {seconds / base:5.2f} x import boto3")
    return 0


if __name__ == "__main__":
    sys.exit(main())
