"""Run a benchmark module through pytest, so that the test harness provides `hass`.

Nothing from Home Assistant may be imported here or by a benchmark's script:
the harness must patch it first (tests/harness_skews.py, then the harness's
own plugin). A benchmark's functions are named `bench_*`, so only this
collects them; `scripts/test` only collects tests/.
"""

from __future__ import annotations

import os
from pathlib import Path
import sys

import pytest

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def run(module: str) -> int:
    """Run bench/<module> through pytest from the repository root; return its code."""
    # `tests` (the harness plugin) and `bench` must be importable.
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    return int(
        pytest.main(
            [
                str(BENCH / module),
                "-p",
                "tests.harness_skews",
                "-p",
                "no:cacheprovider",
                "-q",
                "-s",
                "--no-cov",
                "-o",
                "addopts=",
                "-o",
                "python_functions=bench_*",
                "-W",
                "ignore::DeprecationWarning",
            ]
        )
    )
