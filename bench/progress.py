"""What the terminal progress line costs a run, against the same run with the no-op observer.

Both sides run the real pipeline (parse, select, ECS normalize, batch, commit) over in-memory streams,
so nothing slow hides the observer's cost. The progress side draws to /dev/null as a terminal would,
at its usual rate, and counts its frames.

    python bench/progress.py [--streams N] [--records R] [--repeat K]
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the in-memory store and sink live in tests/

from timing import best_of

from forwarder.console.progress import Progress
from forwarder.console.screen import Screen
from forwarder.delivery.claims import Claims
from forwarder.normalize import NormalizeOptions, get_formatter
from forwarder.observer import IGNORE, RunObserver
from forwarder.pipeline import RunContext, run_streams
from forwarder.quarantine import LocalQuarantine
from forwarder.reading.select import Limits
from forwarder.report import RunReport
from forwarder.streams import Stream
from forwarder.timeutil import now_us
from tests.fakes import MemorySink, MemoryStore
from tests.pipeline.test_delivery_property import ListSource, make_records


class FrameCounter(Screen):
    frames = 0

    def status(self, text: str) -> None:
        self.frames += 1
        super().status(text)


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--records", type=int, default=500, help="records per stream")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    records = make_records(list(range(args.records)), now_us() - 30 * 86400 * 1_000_000)
    plan = [Stream("user", f"u{i}@example.com") for i in range(args.streams)]

    def run(observer: RunObserver) -> None:
        with tempfile.TemporaryDirectory() as quarantine:
            store = MemoryStore()
            ctx = RunContext(
                source=ListSource(records, "asc", 200, 0),
                store=store,
                sink=MemorySink(max_batch_events=500),
                formatter=functools.partial(get_formatter, "ecs"),
                quarantine=LocalQuarantine(quarantine),
                limits=Limits(90 * 86400, 3600, 5000),
                claims=Claims.load(store, 3600),
                options=NormalizeOptions(ingest_time_us=0),
                observer=observer,
            )
            observer.started(plan, lambda: 0)
            report = RunReport(started="now")
            run_streams(ctx, plan, 4, report)
            assert report.ok and report.totals()["shipped"] == args.streams * args.records

    frames = 0

    def with_progress() -> None:
        nonlocal frames
        with open("/dev/null", "w") as devnull:
            screen = FrameCounter(devnull, live=True)
            progress = Progress(screen)
            progress.start()
            try:
                run(progress)
            finally:
                progress.stop()
            frames = screen.frames

    # Interleaved, so both sides see the same machine (caches, other load); the best of each counts.
    floor_s = work_s = float("inf")
    for _ in range(args.repeat):
        floor_s = min(floor_s, best_of(1, lambda: run(IGNORE)))
        work_s = min(work_s, best_of(1, with_progress))
    n = args.streams * args.records
    print(f"streams: {args.streams}, records: {n:,} (ECS, in-memory source, store and sink)")
    print(f"no-op observer:          {n / floor_s:>12,.0f} records/s  ({floor_s:.2f}s)")
    print(f"progress line:           {n / work_s:>12,.0f} records/s  ({work_s:.2f}s, {frames} frames)")
    print(f"ratio (progress / no-op): {work_s / floor_s:>11.3f}x")


if __name__ == "__main__":
    main()
