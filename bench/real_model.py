"""Benchmark a real model on llama.cpp's own server: what a local user waits for.

Gemma 3 270M (Q4_K_M) on `llama-server`, both from the conformance lane's
cache (scripts/conformance installs them; this script does too when they are
missing). The server reports what it evaluated and what it reused from its
cache (`timings.prompt_n`, `timings.cache_n`) in every answer; a proxy in
front of it notes the time to the first streamed token. Run it as a script
(never as part of the test suite; 20 to 40 minutes on two cores):

    .venv/bin/python bench/real_model.py [--entities 50,500] [--repeats 5]
        [--window-entities 120] [--parts alternating,satellites,window,evaluate]

It runs pytest on bench/_real_model_pytest.py, so that the test harness
provides a real `hass`. Four parts:

1. the five-turn Assist conversation of bench/conversation.py with each entity
   count, our agent and core's llama_cpp agent alternating on one slot
   (`--parallel 1`, the slot erased before each conversation, no host prompt
   cache), several conversations each: each request's evaluated and reused
   tokens, time to first token and the turn's time; per turn the median time
   to the first token, and ours against core pair by pair;
2. two conversations at once (two satellites) with our agent on
   `--parallel 2`: each must keep its own cache;
3. the 12-turn conversation of bench/context.py in a 4,096-token window: our
   estimate of each prompt against the server's own count, every turn
   answered, no overflow;
4. `ai_task.evaluate` on the real model: its noul answer must move with the
   question (a front door open for 40 minutes, or for 1).

See docs/benchmarks.md, "Measured on a real model".
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
        prog="bench/real_model.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument(
        "--entities",
        default="50,500",
        help="comma-separated counts of exposed entities (default: 50,500)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="conversations per agent and entity count (default: 5)",
    )
    parser.add_argument(
        "--window-entities",
        type=int,
        default=120,
        help="exposed entities of the 12-turn conversation in 4,096 tokens",
    )
    parser.add_argument(
        "--parts",
        default="alternating,satellites,window,evaluate",
        help="which parts to run (default: all four)",
    )
    args = parser.parse_args()
    os.environ["BENCH_ENTITIES"] = args.entities
    os.environ["BENCH_REPEATS"] = str(args.repeats)
    os.environ["BENCH_WINDOW_ENTITIES"] = str(args.window_entities)
    os.environ["BENCH_PARTS"] = args.parts
    return run("_real_model_pytest.py")


if __name__ == "__main__":
    sys.exit(main())
