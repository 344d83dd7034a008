"""The OpenAI Compatible integration: setup, and what a loaded entry holds."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback

from .const import CONF_PROVIDER, LOGGER
from .coordinator import ServerCoordinator
from .flows.common import LEGACY_TITLES, subentry_title
from .models.capabilities import Capabilities, async_forget
from .models.names import offered
from .models.providers import provider_for
from .repairs import async_track_model_issues

if TYPE_CHECKING:
    from .net.transport import Transport

PLATFORMS = (
    Platform.AI_TASK,
    Platform.BUTTON,
    Platform.CONVERSATION,
    Platform.SENSOR,
    Platform.STT,
    Platform.TTS,
)


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


class UsageTracker:
    """Each subentry's counts (`sensor.USAGE_KEYS`), and who listens to them."""

    def __init__(self) -> None:
        """Start with nothing counted."""
        self.counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._listeners: defaultdict[str, list[Callable[[], None]]] = defaultdict(list)

    @callback
    def record_request(self, subentry_id: str) -> None:
        """Count one request to the server."""
        self._add(subentry_id, requests=1)

    @callback
    def record_error(self, subentry_id: str) -> None:
        """Count one request that the server failed or refused."""
        self._add(subentry_id, errors=1)

    @callback
    def record_usage(self, subentry_id: str, usage: Mapping[str, Any]) -> None:
        """Add the usage block of an answer, in OpenAI's shape."""
        details = usage.get("prompt_tokens_details")
        self._add(
            subentry_id,
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            cached_tokens=_count(details.get("cached_tokens"))
            if isinstance(details, Mapping)
            else 0,
        )

    @callback
    def async_add_listener(
        self, subentry_id: str, listener: Callable[[], None]
    ) -> CALLBACK_TYPE:
        """Call the listener after each change of a subentry's counts."""
        self._listeners[subentry_id].append(listener)
        return partial(self._listeners[subentry_id].remove, listener)

    def _add(self, subentry_id: str, **counts: int) -> None:
        self.counts[subentry_id].update(counts)
        for listener in list(self._listeners[subentry_id]):
            listener()


@dataclass(slots=True)
class RuntimeData:
    """Everything a loaded entry holds."""

    coordinator: ServerCoordinator
    capabilities: Capabilities
    # AI-task requests at once, for all the entry's entities; turns are not held back.
    task_slots: asyncio.Semaphore
    # What a change must touch to need a reload (__init__.setup_basis).
    basis: tuple[object, ...]
    usage: UsageTracker = field(default_factory=UsageTracker)

    @property
    def transport(self) -> Transport:
        """Return the connection to the server."""
        return self.coordinator.transport

    @property
    def models(self) -> list[str]:
        """Return the models the server lists that the pickers offer (or none)."""
        return offered(self.coordinator.data.models)


type OpenAICompatibleConfigEntry = ConfigEntry[RuntimeData]


async def async_setup_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> bool:
    """Connect to the server, learn what it has, and set up the entities."""
    coordinator = ServerCoordinator(hass, entry)
    await coordinator.async_config_entry_first_refresh()
    provider = provider_for(entry.data.get(CONF_PROVIDER))
    survey = coordinator.data
    capabilities = Capabilities(
        hass, entry.entry_id, provider, survey.report, survey.fingerprint
    )
    await capabilities.async_load()
    entry.async_on_unload(capabilities.async_close)
    entry.runtime_data = RuntimeData(
        coordinator=coordinator,
        capabilities=capabilities,
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
    """Forget what was learned about the entry's server."""
    await async_forget(hass, entry.entry_id)
