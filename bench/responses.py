"""Benchmark a 5-turn Assist conversation over both wire APIs, and against core.

Run it as a script (never as part of the test suite):

    .venv/bin/python bench/responses.py [--entities 50,500] [--repeat 10]

The same conversation as bench/conversation.py, held by this integration over
Chat Completions, by this integration over the Responses API, and by Home
Assistant core's openai_conversation (also Responses), all on one simulator
in a process of its own. It prints CPU per turn and how much of each request
repeats the previous one (the prompt cache's share). See
docs/benchmarks.md.
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
        prog="bench/responses.py", description=__doc__.split("\n", 1)[0]
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
        help="measured conversations per agent, after one warm-up (default: 10)",
    )
    args = parser.parse_args()
    os.environ["BENCH_ENTITIES"] = args.entities
    os.environ["BENCH_REPEAT"] = str(max(1, args.repeat))
    return run("_responses_pytest.py")


if __name__ == "__main__":
    sys.exit(main())
