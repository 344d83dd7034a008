"""The server's button: forget what was learned about it, and read it again."""

from __future__ import annotations

from homeassistant.components.button import ButtonEntity
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import OpenAICompatibleConfigEntry
from .const import CONF_PROVIDER, DOMAIN, LOGGER
from .models.providers import provider_for

PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: OpenAICompatibleConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the server's button."""
    async_add_entities([ForgetLessonsButton(entry)])


class ForgetLessonsButton(ButtonEntity):
    """Forget what was learned about the server, and read what it reports again."""

    _attr_has_entity_name = True
    _attr_entity_category = EntityCategory.CONFIG
    _attr_translation_key = "forget_lessons"

    def __init__(self, entry: OpenAICompatibleConfigEntry) -> None:
        """Belong to the entry's server."""
        self._entry = entry
        self._attr_unique_id = f"{entry.entry_id}_forget_lessons"
        self._attr_device_info = dr.DeviceInfo(
            identifiers={(DOMAIN, entry.entry_id)},
            name=entry.title,
            manufacturer=provider_for(entry.data.get(CONF_PROVIDER)).name,
            entry_type=dr.DeviceEntryType.SERVICE,
        )

    async def async_press(self) -> None:
        """Forget every lesson, tell which, and read the server again."""
        runtime = self._entry.runtime_data
        forgotten = runtime.capabilities.forget()
        said = "; ".join(forgotten) or "nothing had been learned"
        LOGGER.info("Forgot what was learned about %s: %s", self._entry.title, said)
        self._attr_extra_state_attributes = {"forgotten": forgotten}
        self.async_write_ha_state()
        await runtime.coordinator.async_refresh()
