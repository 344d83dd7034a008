"""Shared fixtures for the OpenAI Compatible tests.

The harness skews (httpx aliasing, the logger helper, custom_components
shadowing) are handled by tests/harness_skews.py, loaded with ``-p`` before
this file. Tests that talk to a real local server take pytest-socket's
``socket_enabled`` fixture.

Keep this file sectioned: add fixtures under a heading for their area.
"""

from __future__ import annotations

import pytest

# ---------------------------------------------------------------------------
# Base
# ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations(enable_custom_integrations: None) -> None:
    """Let Home Assistant load the integration from custom_components/."""
