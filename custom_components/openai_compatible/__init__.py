"""The OpenAI Compatible integration: setup, and what a loaded entry holds."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers.storage import Store

from .const import CONF_PROVIDER, DOMAIN, LOGGER
from .coordinator import ServerCoordinator
from .flows.common import LEGACY_TITLES, subentry_title
from .models.capabilities import Capabilities
from .models.names import MAX_OFFERED
from .models.providers import provider_for
from .net.transport import Transport
from .repairs import async_track_model_issues

PLATFORMS = (
    Platform.AI_TASK,
    Platform.BUTTON,
    Platform.CONVERSATION,
    Platform.SENSOR,
    Platform.STT,
    Platform.TTS,
)


@dataclass(slots=True)
class RuntimeData:
    """Everything a loaded entry holds."""

    coordinator: ServerCoordinator
    transport: Transport
    capabilities: Capabilities
    # AI-task requests at once, for all the entry's entities; turns are not held back.
    task_slots: asyncio.Semaphore
    # What a change must touch to need a reload (__init__.setup_basis).
    basis: tuple[object, ...]
    # Each subentry's usage counts (`sensor.USAGE_KEYS`), kept by `entity.count`.
    usage: defaultdict[str, Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter)
    )

    @property
    def models(self) -> list[str]:
        """Return the models the server lists that the pickers offer (or none)."""
        return self.coordinator.data.models[:MAX_OFFERED]


type OpenAICompatibleConfigEntry = ConfigEntry[RuntimeData]


async def async_setup_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> bool:
    """Connect to the server, learn what it has, and set up the entities."""
    coordinator = ServerCoordinator(hass, entry)
    await coordinator.async_config_entry_first_refresh()
    provider = provider_for(entry.data.get(CONF_PROVIDER))
    survey = coordinator.data
    entry.runtime_data = RuntimeData(
        coordinator=coordinator,
        transport=coordinator.transport,
        capabilities=Capabilities(provider, survey.report, survey.server),
        task_slots=asyncio.Semaphore(provider.concurrency),
        basis=setup_basis(entry),
    )
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    async_track_model_issues(hass, entry)
    entry.async_on_unload(entry.add_update_listener(_async_changed))
    return True


def setup_basis(entry: OpenAICompatibleConfigEntry) -> tuple[object, ...]:
    """Return all of the entry but its subentries' settings, which apply in place."""
    return (entry.title, dict(entry.data), dict(entry.options), set(entry.subentries))


async def _async_changed(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> None:
    """Reload after the entry changed; else refresh: subentry settings apply in place."""
    if setup_basis(entry) != entry.runtime_data.basis:
        await hass.config_entries.async_reload(entry.entry_id)
    else:
        await entry.runtime_data.coordinator.async_refresh()


async def async_migrate_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> bool:
    """Bring an entry of an older version up to date (1.2: no unique id, titles)."""
    if entry.version > 1:
        return False
    if entry.minor_version < 2:
        for subentry in entry.subentries.values():
            kind = subentry.subentry_type
            if subentry.title == LEGACY_TITLES.get(kind):
                hass.config_entries.async_update_subentry(
                    entry,
                    subentry,
                    title=subentry_title(kind, entry.title, entry.data, subentry.data),
                )
        hass.config_entries.async_update_entry(entry, unique_id=None, minor_version=2)
        LOGGER.debug("Migrated %s to version 1.2", entry.title)
    return True


async def async_unload_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> bool:
    """Unload the entities."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


async def async_remove_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> None:
    """Remove the lessons earlier builds stored, so removal leaves nothing behind."""
    key = f"{DOMAIN}.{entry.entry_id}.capabilities"
    await Store[dict[str, object]](hass, 1, key).async_remove()
