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
    addresses = list(PRESETS_BY_ADDRESS)
    answered = await asyncio.gather(
        *(_async_lists_models(hass, address) for address in addresses)
    )
    return [
        key
        for address, answers in zip(addresses, answered, strict=True)
        if answers
        for key in PRESETS_BY_ADDRESS[address]
    ]


async def _async_lists_models(hass: HomeAssistant, base_url: str) -> bool:
    try:
        async with asyncio.timeout(DISCOVERY_SECONDS):
            listing = await async_fetch_models(Transport(hass, base_url, None))
    except ServerError, TimeoutError:
        return False
    return listing is not None
