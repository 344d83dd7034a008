"""Benchmark a whole voice command on real servers: what a satellite's user waits for.

Home Assistant's Assist pipeline from audio to the agent's first words:
commands spoken by espeak-ng, sent at the pace of speech as a satellite sends
them (a new conversation each), heard by faster-whisper-server with Whisper
base (conformance/speech.py), answered by our agent or core's `llama_cpp`
agent on llama-server with Qwen2.5-Coder-0.5B-Instruct (one slot, no host
prompt cache), 50 and 500 exposed entities. Run it as a script, never as part
of the test suite (an hour or more on two cores at 500 entities):

    .venv/bin/python bench/voice_real.py [--entities 50,500] [--commands 4]
        [--cores shared|separate]

It runs pytest on bench/_voice_real_pytest.py, so that the test harness
provides a real `hass`. Needs espeak-ng and sox (Debian: `apt-get install
espeak-ng sox`), llama-server and the model in the lane's cache
(scripts/conformance installs them); it installs the speech server itself.

Per command: the speech-to-text time, the time from the end of speech to the
agent's first token and to its first words, the first request's tokens
evaluated and reused (llama-server's `timings`), the model rounds, and the
whole time; first on a server warm from earlier commands (each agent's first
command, "what time is it", fills the cache and is not measured), then with
the server's cache erased before each command: ours with its warm-up, ours
without it, ours without one-round answers (two model rounds, device commands
only), and core. One round against two is read on the warm server, the cold
figures beside it. The targets are printed with met / not met.
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
        prog="bench/voice_real.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument(
        "--entities",
        default="50,500",
        help="comma-separated counts of exposed entities (default: 50,500)",
    )
    parser.add_argument(
        "--commands",
        type=int,
        default=4,
        help="commands per agent and part, at most 4 (default: 4)",
    )
    parser.add_argument(
        "--cores",
        choices=("shared", "separate"),
        default="shared",
        help=(
            "shared: both servers on every CPU (default); separate: llama-server "
            "on CPU 0 and Whisper on CPU 1, one thread each"
        ),
    )
    args = parser.parse_args()
    os.environ["BENCH_CORES"] = args.cores
    os.environ["BENCH_ENTITIES"] = args.entities
    os.environ["BENCH_COMMANDS"] = str(args.commands)
    return run("_voice_real_pytest.py")


if __name__ == "__main__":
    sys.exit(main())
