"""The tokens of what the simulator writes, estimated; a prompt is counted in window.py."""

from __future__ import annotations

import math


def count_tokens(text: str) -> int:
    """Estimate tokens the usual way: four characters each."""
    return math.ceil(len(text) / 4)
