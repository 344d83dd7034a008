"""Usage sensors of each agent and task: tokens, requests and errors."""

from __future__ import annotations

from typing import Final

from homeassistant.components.sensor import RestoreSensor, SensorStateClass
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import OpenAICompatibleConfigEntry
from .const import SUBENTRY_AI_TASK, SUBENTRY_CONVERSATION
from .entity import subentry_device_info, usage_signal

PARALLEL_UPDATES = 0

USAGE_KEYS: Final = (
    "prompt_tokens",
    "completion_tokens",
    # Prompt tokens the server answered from its cache (part of prompt_tokens).
    "cached_tokens",
    "requests",
    "errors",
)


async def async_setup_entry(
    hass: HomeAssistant,
    entry: OpenAICompatibleConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the usage sensors of each agent and task."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type in (SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK):
            async_add_entities(
                [UsageSensor(entry, subentry, key) for key in USAGE_KEYS],
                config_subentry_id=subentry.subentry_id,
            )


class UsageSensor(RestoreSensor):
    """One usage count of an agent or task."""

    _attr_has_entity_name = True
    _attr_should_poll = False
    _attr_state_class = SensorStateClass.TOTAL_INCREASING
    _attr_entity_category = EntityCategory.DIAGNOSTIC
    _attr_entity_registry_enabled_default = False

    def __init__(
        self, entry: OpenAICompatibleConfigEntry, subentry: ConfigSubentry, key: str
    ) -> None:
        """Show one count of the subentry, on its device."""
        self._key = self._attr_translation_key = key
        self._counts = entry.runtime_data.usage[subentry.subentry_id]
        self._signal = usage_signal(subentry.subentry_id)
        self._attr_unique_id = f"{subentry.subentry_id}_{key}"
        self._attr_device_info = subentry_device_info(entry, subentry)

    @property
    def native_value(self) -> int:
        """Return the count."""
        return self._counts[self._key]

    async def async_added_to_hass(self) -> None:
        """Add the count saved before a restart; show each change."""
        await super().async_added_to_hass()
        last = await self.async_get_last_sensor_data()
        if last is not None and isinstance(last.native_value, (int, float)):
            self._counts[self._key] += int(last.native_value)
        self.async_on_remove(
            async_dispatcher_connect(self.hass, self._signal, self.async_write_ha_state)
        )
