"""Local model servers that answer at their default address on this machine."""

from __future__ import annotations

import asyncio
from typing import Final

from homeassistant.core import HomeAssistant

from ..errors import ServerError
from ..net.transport import Transport
from .listing import async_fetch_models
from .providers import PROVIDERS

DISCOVERY_SECONDS: Final = 1.5


def _presets_by_address() -> dict[str, list[str]]:
    """Return the local presets by default address (several share one)."""
    by_address: dict[str, list[str]] = {}
    for key, preset in PROVIDERS.items():
        if preset.local:
            by_address.setdefault(preset.base_url, []).append(key)
    return by_address


PRESETS_BY_ADDRESS: Final = _presets_by_address()


async def async_answering_presets(hass: HomeAssistant) -> list[str]:
    """Return the local presets whose server lists models at its default address."""
    found = await asyncio.gather(
        *(_async_found(hass, *by_address) for by_address in PRESETS_BY_ADDRESS.items())
    )
    return [key for keys in found for key in keys]


async def _async_found(hass: HomeAssistant, address: str, keys: list[str]) -> list[str]:
    try:
        async with asyncio.timeout(DISCOVERY_SECONDS):
            listing = await async_fetch_models(Transport(hass, address, None))
    except ServerError, TimeoutError:
        return []
    return [] if listing is None else keys
