"""Request fields a server does not know, refused as OpenAI refuses them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .wire import APIError

if TYPE_CHECKING:
    from .settings import SimulatorSettings


def check(body: dict[str, Any], settings: SimulatorSettings) -> None:
    """Raise APIError for the first field the settings refuse that the body holds."""
    for name in settings.refused_fields:
        if name in body:
            raise APIError(
                f"Unrecognized request argument supplied: {name}", param=name
            )
