"""HEC sink throughput against a bare HTTP transfer of the same bytes, measured in the same run.

Both sides post to the same loopback HEC test receiver (which parses every envelope, as Splunk
would). The floor is one `requests.post` per batch of the already-built, already-gzipped body: what
any HEC client must at least do. The ratio says what the sink's envelope building, batching, gzip and
reply checking cost on top.

    python bench/hec_sink.py [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path
from typing import List

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the test receiver lives in tests/

from timing import best_of

from forwarder.normalize import NormalizeOptions, get_formatter
from forwarder.records import parse_record
from forwarder.sim.generate import generate_org
from forwarder.sinks.base import batches
from forwarder.sinks.hec import HecSink, envelope, metadata_fields
from forwarder.sinks.settings import SinkSettings
from forwarder.timeutil import now_us
from tests.receivers.hec import HecReceiver


def main(argv: List[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    raws = generate_org(7).all_records()
    options = NormalizeOptions(ingest_time_us=now_us())
    fmt = get_formatter("ecs")
    events = [fmt(parse_record(raws[i % len(raws)]), options) for i in range(args.events)]

    with HecReceiver() as hec:
        settings = SinkSettings(uri=hec.url, token=hec.token)
        sink = HecSink(settings)
        meta = metadata_fields(settings)
        bodies = [
            gzip.compress(b"\n".join(envelope(e, meta) for e in batch), 6)
            for batch in batches(events, sink.max_batch_events, sink.max_batch_bytes)
        ]
        session = requests.Session()
        headers = {"Authorization": f"Splunk {hec.token}", "Content-Encoding": "gzip"}

        def floor() -> None:
            for body in bodies:
                session.post(
                    hec.http_url + "/services/collector/event", data=body, headers=headers
                ).raise_for_status()

        def through_sink() -> None:
            for batch in batches(events, sink.max_batch_events, sink.max_batch_bytes):
                sink.send(batch)

        floor_s = best_of(args.repeat, floor)
        sink_s = best_of(args.repeat, through_sink)
        sink.close()
    n = len(events)
    print(f"events: {n} in {len(bodies)} requests to a loopback HEC receiver")
    print(f"floor  (requests.post of prebuilt gzipped bodies): {n / floor_s:>10,.0f} events/s")
    print(f"HecSink.send (envelopes, gzip, batching, checks):   {n / sink_s:>10,.0f} events/s")
    print(f"ratio  (sink time / floor time):                    {sink_s / floor_s:>10.2f}x")


if __name__ == "__main__":
    main()
