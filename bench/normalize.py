"""Normalize+serialize throughput against a floor measured in the same run.

The floor is a bare orjson (or json) loads+dumps of the same records: the least any pipeline must do
to read a record and write an event. The ratio says how many floors one normalization costs.

    python bench/normalize.py [--records N] [--format ecs] [--repeat R]
"""

from __future__ import annotations

import argparse
import time
from typing import List

from timing import best_of

from forwarder import jsonutil
from forwarder.normalize import NormalizeOptions, get_formatter
from forwarder.records import parse_record
from forwarder.simdata import generate_org
from forwarder.timeutil import now_us


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--format", default="ecs")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    org_records = generate_org(7).all_records()
    raws = [org_records[i % len(org_records)] for i in range(args.records)]
    blobs = [jsonutil.dumps(r) for r in raws]
    formatter = get_formatter(args.format)
    options = NormalizeOptions(ingest_time_us=now_us())

    def floor() -> None:
        for blob in blobs:
            jsonutil.dumps(jsonutil.loads(blob))

    def pipeline() -> None:
        for blob in blobs:
            formatter(parse_record(jsonutil.loads(blob)), options)

    floor_s = best_of(args.repeat, floor, time.process_time)
    work_s = best_of(args.repeat, pipeline, time.process_time)
    n = len(blobs)
    print(f"records: {n} ({'orjson' if jsonutil.HAVE_ORJSON else 'stdlib json'}), format {args.format}")
    print(f"floor  (loads+dumps):                 {n / floor_s:>12,.0f} records/s")
    print(f"parse+id+normalize+serialize:         {n / work_s:>12,.0f} records/s")
    print(f"ratio  (normalize time / floor time): {work_s / floor_s:>12.1f}x")


if __name__ == "__main__":
    main()
