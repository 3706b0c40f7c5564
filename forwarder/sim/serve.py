"""``audit-forwarder simulate``: the simulator in the foreground until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import List, Optional

from .generate import generate_org
from .simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from .styles import NAMELESS


def serve(argv: Optional[List[str]] = None) -> int:
    """Run the simulator until Ctrl-C; 1 when it cannot listen."""
    parser = argparse.ArgumentParser(
        prog="audit-forwarder simulate", description="Run the fake platform API."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated organization")
    parser.add_argument("--style", choices=("envelope", "bare"), default="envelope", help="response shape")
    parser.add_argument(
        "--max-rps", type=float, help="answer 429 (with Retry-After) past this many requests/s"
    )
    parser.add_argument(
        "--nameless",
        choices=NAMELESS,
        default="refuse",
        help="how an audits query without name is answered (default refuse: 400)",
    )
    parser.add_argument(
        "--scenarios", action="store_true", help="serve the detection scenarios (forwarder/sim/scenarios.py)"
    )
    args = parser.parse_args(argv)
    from .scenarios import seeded_org  # only when asked: the scenarios are a test aid

    org = seeded_org(args.seed)[0] if args.scenarios else generate_org(args.seed)
    simulator = Simulator(org, style=args.style, max_rps=args.max_rps, nameless=args.nameless)
    try:
        url = simulator.start(args.host, args.port)
    except OSError as exc:
        print(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:  # from the first line on: a Ctrl-C as soon as the address is shown is a clean stop
        print(f"platform API simulator listening on {url} (Ctrl-C to stop)")
        print("paste into a shell to point the forwarder at it:")
        print(f"  export FORWARDER_API_URL={url}")
        print(f"  export FORWARDER_CLIENT_ID={DEMO_CLIENT_ID}")
        print(f"  export FORWARDER_CLIENT_SECRET={DEMO_CLIENT_SECRET}", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        simulator.stop()
    return 0
