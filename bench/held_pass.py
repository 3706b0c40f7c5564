"""A pass as a run holds it, against a floor held the same way, each in a fresh process.

``bench/normalize.py`` drops every record and event as soon as it is made. A run does not: a pass
reads a page, holds every record it keeps (``FORWARDER_MAX_RECORDS_PER_PASS``, 5,000 by default)
and every event until its batch is sent. Holding costs what dropping hides: heap the process has
not touched yet (page faults, in the first pass of a process: a CLI run, a cold Lambda) and memory
left between what is held. Here one page of ``--records`` distinct records is read, each record
parsed and held, each event made and held, in a process of its own; the floor does the least a
pass must, held alike: the page read by orjson and held, each record written by orjson and held
(copied to its own size, as ``jsonutil`` holds a text: orjson's own buffer costs more to hold).

Printed per format: the first pass's CPU time per record and its ratio to the floor's first pass,
page faults per record, the best of ``--passes`` later passes (the heap then reused) and its ratio,
and the process's peak RSS.

    python bench/held_pass.py [--records N] [--passes P] [--format ecs ...]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List

from forwarder import jsonutil
from forwarder.normalize import NormalizeOptions, formats, get_formatter
from forwarder.records import parse_record
from forwarder.sim.generate import generate_org

_NOW_US = 1_772_366_400_000_000  # a fixed organization, run after run


def measure(fmt: str, count: int, passes: int) -> Dict[str, float]:
    """In this process: the first pass and the best later one, ``fmt`` "floor" for the floor."""
    records: List[Any] = []
    seed = 1
    while len(records) < count:
        records += generate_org(seed, now_us=_NOW_US).all_records()
        seed += 1
    body = jsonutil.dumps(records[:count])
    del records
    one_pass = _floor_pass if fmt == "floor" else _pass(fmt)
    times = []
    faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for n in range(1 + passes):
        start = time.process_time()
        held = one_pass(body)
        times.append(time.process_time() - start)
        if n == 0:
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before
        del held
    return {
        "first_us": times[0] / count * 1e6,
        "faults": faults / count,
        "steady_us": min(times[1:]) / count * 1e6,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _floor_pass(body: bytes) -> Any:
    import orjson

    dumps, join = orjson.dumps, b"".join
    page = orjson.loads(body)
    # Each text copied to its own size, as jsonutil holds them: orjson's own buffer, held, costs more.
    return page, [join((dumps(raw), b"")) for raw in page]


def _pass(fmt: str) -> Callable[[bytes], Any]:
    formatter = get_formatter(fmt)
    options = NormalizeOptions(ingest_time_us=_NOW_US)

    def one_pass(body: bytes) -> Any:
        records = [parse_record(raw) for raw in jsonutil.loads(body)]
        return records, [formatter(record, options) for record in records]

    return one_pass


def _in_fresh_process(fmt: str, count: int, passes: int) -> Dict[str, float]:
    argv = [sys.executable, __file__, "--child", fmt, "--records", str(count), "--passes", str(passes)]
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    result: Dict[str, float] = json.loads(out)
    return result


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000, help="one pass (default: the cap's default)")
    parser.add_argument("--passes", type=int, default=5, help="later passes, the best kept")
    parser.add_argument("--format", action="append", choices=formats(), help="default: every format")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.records, args.passes)))
        return
    floor = _in_fresh_process("floor", args.records, args.passes)
    print(f"one pass of {args.records:,} records held, each format in a fresh process, CPU time")
    print(f"{'':8}{'first us':>10}{'ratio':>8}{'faults':>8}{'later us':>10}{'ratio':>8}{'RSS MB':>8}")
    for name in ["floor", *(args.format or formats())]:
        got = floor if name == "floor" else _in_fresh_process(name, args.records, args.passes)
        print(
            f"{name:8}{got['first_us']:>10.2f}{got['first_us'] / floor['first_us']:>7.1f}x"
            f"{got['faults']:>8.2f}{got['steady_us']:>10.2f}{got['steady_us'] / floor['steady_us']:>7.1f}x"
            f"{got['rss_mb']:>8.0f}"
        )


if __name__ == "__main__":
    main()
