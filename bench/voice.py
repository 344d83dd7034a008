"""Benchmark a voice turn: time to the first audio byte after the user stops.

Run it as a script (never as part of the test suite):

    .venv/bin/python bench/voice.py [--repeat 5]

It runs pytest on bench/_voice_pytest.py, so that the test harness provides a
real `hass`; the simulator runs in a process of its own
(`python -m bench.sim_server`), paced like a local server. Three pipelines with
our agent are compared: our speech-to-text and text-to-speech with streaming
TTS, the same with whole-file TTS, and core's openai_conversation
speech-to-text and text-to-speech pointed at the simulator. See
docs/benchmarks.md, "Voice".
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
        prog="bench/voice.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="measured turns per pipeline, after one warm-up (default: 5)",
    )
    args = parser.parse_args()
    os.environ["BENCH_REPEAT"] = str(max(1, args.repeat))
    return run("_voice_pytest.py")


if __name__ == "__main__":
    sys.exit(main())
