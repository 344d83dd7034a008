"""Usage sensors of each agent and task: tokens, requests and errors.

They are disabled by default. Each counts from the moment the integration
first saw a request, and continues from its last value after a restart.
"""

from __future__ import annotations

from homeassistant.components.sensor import (
    RestoreSensor,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import EntityCategory
from homeassistant.core import callback

from . import OpenAICompatibleConfigEntry
from .const import SUBENTRY_AI_TASK, SUBENTRY_CONVERSATION
from .entity import subentry_device_info
from .platforms import setup_per_subentry

PARALLEL_UPDATES = 0

# The keys are the fields of usage.UsageCounts.
USAGE_SENSORS = tuple(
    SensorEntityDescription(
        key=key,
        translation_key=key,
        state_class=SensorStateClass.TOTAL_INCREASING,
        entity_category=EntityCategory.DIAGNOSTIC,
        entity_registry_enabled_default=False,
    )
    for key in (
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "requests",
        "errors",
    )
)
# The subentries that talk to a chat model, and so use tokens.
COUNTED_SUBENTRIES = (SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK)


def _usage_sensors(
    entry: OpenAICompatibleConfigEntry, subentry: ConfigSubentry
) -> list[UsageSensor]:
    """Return the usage sensors of an agent or task."""
    return [UsageSensor(entry, subentry, description) for description in USAGE_SENSORS]


async_setup_entry = setup_per_subentry(_usage_sensors, *COUNTED_SUBENTRIES)


class UsageSensor(RestoreSensor):
    """One usage count of an agent or task, kept across restarts."""

    _attr_has_entity_name = True
    _attr_should_poll = False

    def __init__(
        self,
        entry: OpenAICompatibleConfigEntry,
        subentry: ConfigSubentry,
        description: SensorEntityDescription,
    ) -> None:
        """Describe the count and the device of its subentry."""
        self.entity_description = description
        self._tracker = entry.runtime_data.usage
        self._subentry_id = subentry.subentry_id
        self._attr_unique_id = f"{subentry.subentry_id}_{description.key}"
        self._attr_device_info = subentry_device_info(entry, subentry)

    @property
    def native_value(self) -> int:
        """Return the count."""
        value: int = getattr(self._tracker.counts(self._subentry_id), self._field)
        return value

    @property
    def _field(self) -> str:
        """Return the field of UsageCounts this sensor shows."""
        return self.entity_description.key

    async def async_added_to_hass(self) -> None:
        """Continue from the count saved before a restart; follow changes."""
        await super().async_added_to_hass()
        last = await self.async_get_last_sensor_data()
        if last is not None and isinstance(last.native_value, (int, float)):
            self._tracker.restore(
                self._subentry_id, self._field, int(last.native_value)
            )
        self.async_on_remove(
            self._tracker.async_add_listener(self._subentry_id, self._async_changed)
        )

    @callback
    def _async_changed(self) -> None:
        """Show the new count."""
        self.async_write_ha_state()
