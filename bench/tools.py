"""Benchmark the tools a model sees: all of a 70-tool MCP server, or on demand.

Run it as a script (never as part of the test suite):

    .venv/bin/python bench/tools.py

It runs pytest on bench/_tools_pytest.py, so that the test harness provides a
real `hass`; the simulator runs in a process of its own
(`python -m bench.sim_server`). See docs/benchmarks.md.
"""

from __future__ import annotations

from pathlib import Path
import sys

# Nothing from Home Assistant may be imported here: the harness must patch it
# first (tests/harness_skews.py, then the harness's own plugin).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run("_tools_pytest.py"))
