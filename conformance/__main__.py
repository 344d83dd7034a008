"""Run the conformance lane: `python -m conformance` (see scripts/conformance)."""

import sys

from .lane import main

sys.exit(main())
