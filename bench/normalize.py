"""Normalize+serialize throughput of every format against a floor measured in the same run.

The floor is a bare orjson (or json) loads+dumps of the same records: the least any pipeline must do
to read a record and write an event. A format's ratio says how many floors one record costs it:
loads, parse (created_at, event id), normalize, serialize. Times are CPU time of this process (the
machine may be shared), best of ``--repeat`` rounds; each round runs the floor, then every format
once, each followed by the floor again, so a slow spell of the machine costs one run of each rather
than all the runs of one.

    python bench/normalize.py [--records N] [--format ecs --format cef ...] [--repeat R] [--distinct]
                              [--records-per-pass P]

By default the records cycle through one generated organization (1,748 records), so each is
normalized about 11 times and the caches of what a trail repeats are warm. ``--distinct`` draws
them from as many organizations as it takes for no record to repeat: each DMARC or SPF text, role
list and user is then met about as often as in one real trail.

By default every record is normalized with one options value. A run gives each pass of a stream its
own (its ingest time): ``--records-per-pass P`` does the same every ``P`` records, so what a
formatter caches per options value is measured as a run meets it (2,000 shallow streams: ``P`` = 3).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from typing import Any, Callable, Dict, List, Tuple

from timing import best_of

from forwarder import jsonutil
from forwarder.normalize import NormalizeOptions, formats, get_formatter
from forwarder.records import parse_record
from forwarder.sim.generate import generate_org
from forwarder.timeutil import now_us


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--format", action="append", choices=formats(), help="default: every format")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--distinct", action="store_true", help="no record repeats (see above)")
    parser.add_argument("--records-per-pass", type=int, default=0, help="new options every P records")
    args = parser.parse_args(argv)

    org_records = generate_org(7).all_records()
    seed = 7
    while args.distinct and len(org_records) < args.records:
        seed += 1
        org_records += generate_org(seed).all_records()
    raws = [org_records[i % len(org_records)] for i in range(args.records)]
    # Each record's text in an object of its own size, as a page holds them side by side, whatever
    # jsonutil.dumps hands back: a text left in orjson's buffer (1 KiB or more each) spreads the
    # inputs over the heap, and every read of them, the floor's too, costs more.
    blobs = [b"".join((jsonutil.dumps(r), b"")) for r in raws]
    options = NormalizeOptions(ingest_time_us=now_us())

    bare_loads, bare_dumps = _bare_codec()

    def floor() -> None:
        for blob in blobs:
            bare_dumps(bare_loads(blob))

    per_pass = args.records_per_pass or len(blobs)
    passes = [blobs[start : start + per_pass] for start in range(0, len(blobs), per_pass)]

    def pipeline(name: str) -> Callable[[], None]:
        formatter = get_formatter(name)

        def run() -> None:
            for n, chunk in enumerate(passes):
                opts = replace(options, ingest_time_us=options.ingest_time_us + n)  # as a pass does
                for blob in chunk:
                    formatter(parse_record(jsonutil.loads(blob)), opts)

        return run

    # Round by round (see the module docstring): a slow spell of a shared machine lasts seconds.
    runs = {name: pipeline(name) for name in args.format or formats()}
    floor_s = math.inf
    work: Dict[str, float] = dict.fromkeys(runs, math.inf)
    for _ in range(args.repeat):
        floor_s = min(floor_s, best_of(1, floor, time.process_time))
        for name, run in runs.items():
            work[name] = min(work[name], best_of(1, run, time.process_time))
            floor_s = min(floor_s, best_of(1, floor, time.process_time))  # as many floor runs as before

    n = len(blobs)
    codec = "orjson" if jsonutil.HAVE_ORJSON else "stdlib json"
    kind = "distinct" if args.distinct else f"{len(org_records):,} distinct, cycled"
    per = f", {per_pass} per pass" if args.records_per_pass else ""
    print(f"records: {n} ({kind}{per}, {codec}), CPU time, best of {args.repeat}")
    print(f"{'':8}{'records/s':>12}{'us/record':>11}{'ratio':>8}")
    print(f"{'floor':8}{n / floor_s:>12,.0f}{floor_s / n * 1e6:>11.2f}{1:>7.1f}x   (loads+dumps)")
    for name, seconds in work.items():
        print(f"{name:8}{n / seconds:>12,.0f}{seconds / n * 1e6:>11.2f}{seconds / floor_s:>7.1f}x")


def _bare_codec() -> Tuple[Callable[[bytes], Any], Callable[[Any], Any]]:
    """orjson itself when installed, else the standard library: not jsonutil, whose own work (exact
    big integers, fallbacks) is part of what the pipeline costs."""
    if jsonutil.HAVE_ORJSON:
        import orjson

        return orjson.loads, orjson.dumps
    return json.loads, lambda value: json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


if __name__ == "__main__":
    main()
