"""Benchmark a 12-turn Assist conversation in a small context window.

This integration fits each request into the window; core's llama_cpp sends
everything. Run it as a script (never as part of the test suite):

    .venv/bin/python bench/context.py [--entities 500] [--windows 16384,32768]

It runs pytest on bench/_context_pytest.py, so that the test harness provides
a real `hass`; the simulator runs in a process of its own
(`python -m bench.sim_server`) with its context window enforced like a real
server's. See docs/benchmarks.md.
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
        prog="bench/context.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument(
        "--entities",
        type=int,
        default=500,
        help="exposed entities, half lights, half sensors (default: 500)",
    )
    parser.add_argument(
        "--windows",
        default="16384,32768",
        help="comma-separated context windows in tokens (default: 16384,32768)",
    )
    args = parser.parse_args()
    os.environ["BENCH_CONTEXT_ENTITIES"] = str(args.entities)
    os.environ["BENCH_CONTEXT_WINDOWS"] = args.windows
    return run("_context_pytest.py")


if __name__ == "__main__":
    sys.exit(main())
