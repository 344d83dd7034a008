"""Fixtures of the end-to-end tests, which run no in-process Home Assistant."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations() -> None:
    """Override the package-wide fixture: it would start the `hass` fixture.

    Here Home Assistant runs as a separate process that loads the integration
    from a symlink in its own config folder.
    """
