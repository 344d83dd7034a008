"""The OpenAI Compatible integration."""

from __future__ import annotations

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady

from .api import RuntimeData, async_create_client, async_fetch_models
from .const import DOMAIN, LOGGER
from .errors import AuthError, ServerError
from .naming import LEGACY_TITLES, subentry_title

PLATFORMS = (Platform.AI_TASK, Platform.CONVERSATION, Platform.SENSOR)

type OpenAICompatibleConfigEntry = ConfigEntry[RuntimeData]


async def async_setup_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> bool:
    """Connect to the server and set up the entities."""
    client = await async_create_client(hass, dict(entry.data))
    try:
        models = await async_fetch_models(client)
    except AuthError as err:
        raise ConfigEntryAuthFailed(
            translation_domain=DOMAIN, translation_key="invalid_auth"
        ) from err
    except ServerError as err:
        # Down, timing out, rate limited or failing: all worth a retry later.
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN,
            translation_key=err.translation_key,
            translation_placeholders=err.translation_placeholders,
        ) from err
    if models is None:
        # Some servers have no models endpoint; they still serve chat.
        LOGGER.debug("%s lists no models; chat still works", entry.title)
        models = []
    entry.runtime_data = RuntimeData(client=client, models=models)
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    entry.async_on_unload(entry.add_update_listener(_async_reload))
    return True


async def async_migrate_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> bool:
    """Bring an entry saved by an older version up to date.

    1.2 drops the unique id, which reauth and reconfigure used to change
    (duplicates are refused by base URL and key instead), and names subentries
    that still have the old fixed titles after their server and model.
    """
    if entry.version > 1:
        # Saved by a newer version: nothing here knows its shape.
        return False
    if entry.minor_version < 2:
        for subentry in entry.subentries.values():
            kind = subentry.subentry_type
            if subentry.title == LEGACY_TITLES.get(kind):
                hass.config_entries.async_update_subentry(
                    entry,
                    subentry,
                    title=subentry_title(kind, entry.data, subentry.data),
                )
        hass.config_entries.async_update_entry(entry, unique_id=None, minor_version=2)
        LOGGER.debug("Migrated %s to version 1.2", entry.title)
    return True


async def async_unload_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> bool:
    """Unload the entities."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


async def _async_reload(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> None:
    """Reload after the entry or one of its subentries changed."""
    await hass.config_entries.async_reload(entry.entry_id)
