"""Benchmark a 5-turn Assist conversation: this integration vs core's llama_cpp.

Run it as a script (never as part of the test suite):

    .venv/bin/python bench/conversation.py [--entities 50,500] [--repeat 5]
                                           [--profile DIR] [--dump DIR]

It runs pytest on bench/_conversation_pytest.py, so that the test harness
provides a real `hass`; the simulator runs in a process of its own
(`python -m bench.sim_server`), so the CPU time measured here is Home
Assistant's and the integrations' only. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import sys

# Nothing from Home Assistant may be imported here: the harness must patch it
# first (tests/harness_skews.py, then the harness's own plugin).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import run  # noqa: E402


def main() -> int:
    """Parse the command line and run the benchmark through pytest."""
    parser = argparse.ArgumentParser(
        prog="bench/conversation.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument(
        "--entities",
        default="50,500",
        help="comma-separated counts of exposed entities (default: 50,500)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=10,
        help="measured conversations per integration, after one warm-up (default: 10)",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="also write cProfile data of the measured turns to DIR",
    )
    parser.add_argument(
        "--dump",
        metavar="DIR",
        help="also write the request bodies of the last conversation to DIR",
    )
    args = parser.parse_args()
    os.environ["BENCH_ENTITIES"] = args.entities
    os.environ["BENCH_REPEAT"] = str(max(1, args.repeat))
    if args.profile:
        os.environ["BENCH_PROFILE"] = str(Path(args.profile).resolve())
    if args.dump:
        os.environ["BENCH_DUMP"] = str(Path(args.dump).resolve())
    return run("_conversation_pytest.py")


if __name__ == "__main__":
    sys.exit(main())
