"""Tell whether a change helps real instruct models control a home.

A home of ten areas and 61 exposed entities (lights, switches, covers with a
garage door and curtains, locks, fans, thermostats, media players, a vacuum,
valves, to-do lists, sensors; near-namesakes among them) and 89 things people
say to it (bench/home.py). Each command is said in a fresh conversation, every
state reset before it, to our agent and to core's `llama_cpp` agent in turn,
in one Home Assistant, on the same llama-server, model, Assist API and
exposed entities, and judged as its speaker would: by the states afterwards,
and for a question, by whether the answer holds the right value.

Qwen2.5 Coder 0.5B and 1.5B Instruct (Q4_K_M) on `llama-server --jinja
--parallel 2` (one slot per agent, each keeping its own prompt cached), both
from the conformance lane's cache (installed when missing). Run it as a
script, never in the test suite; about an hour on two cores:

    .venv/bin/python bench/home_control.py [--model 0.5b,1.5b] [--limit N]
        [--agents ours,core] [--commands PATTERN] [--report PATH]

It prints a line per command (each agent's ✓/✗, model rounds, seconds, what
was said, what went wrong), then per model and agent: good / total, per
group, median seconds per command, prompt tokens evaluated and taken from the
server's cache, model rounds, ours minus core, and the targets, met or not.
Everything goes into a JSON report too (one file per model).
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
        prog="bench/home_control.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument(
        "--model",
        default="0.5b,1.5b",
        help="comma-separated models: 0.5b (all commands), 1.5b (30 of them)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        help="this many commands per model, taken in turn from each group",
    )
    parser.add_argument(
        "--agents", default="ours,core", help="comma-separated: ours, core"
    )
    parser.add_argument(
        "--commands", help="only the commands whose text matches this pattern"
    )
    parser.add_argument(
        "--report",
        type=Path,
        help="the JSON report's path; -<model> is added to its name "
        "(default: home_control.json in the temporary folder)",
    )
    args = parser.parse_args()
    os.environ["BENCH_MODELS"] = args.model
    os.environ["BENCH_AGENTS"] = args.agents
    os.environ["BENCH_LIMIT"] = str(args.limit or "")
    os.environ["BENCH_COMMANDS"] = args.commands or ""
    os.environ["BENCH_REPORT"] = str(args.report.resolve()) if args.report else ""
    return run("_home_control_pytest.py")


if __name__ == "__main__":
    sys.exit(main())
