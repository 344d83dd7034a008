"""The OpenAI Compatible integration."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady

from .const import CONF_PROVIDER, DOMAIN, LOGGER
from .coordinator import ServerCoordinator, Survey, async_survey
from .errors import AuthError, ServerError
from .flows.titles import LEGACY_TITLES, subentry_title
from .models.capabilities import Capabilities, async_forget
from .models.issues import ModelIssues
from .models.listing import MAX_LISTING_BYTES, ModelListing, async_fetch_models
from .models.providers import provider_for
from .net.sse import mebibytes
from .net.transport import Transport
from .runtime import RuntimeData

PLATFORMS = (
    Platform.AI_TASK,
    Platform.BUTTON,
    Platform.CONVERSATION,
    Platform.SENSOR,
    Platform.STT,
    Platform.TTS,
)

type OpenAICompatibleConfigEntry = ConfigEntry[RuntimeData]


async def async_setup_entry(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> bool:
    """Connect to the server, learn what it has, and set up the entities."""
    entry.runtime_data = await _async_runtime(hass, entry)
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    _follow_model_issues(hass, entry)
    entry.async_on_unload(entry.add_update_listener(_async_changed))
    return True


def setup_basis(entry: OpenAICompatibleConfigEntry) -> tuple[object, ...]:
    """Return what a setup is built on: all of the entry but its subentries' settings.

    The entities read their subentry's settings at each request, so only a
    change of this needs a reload.
    """
    return (entry.title, dict(entry.data), dict(entry.options), set(entry.subentries))


async def _async_runtime(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> RuntimeData:
    """Return the entry's runtime data, from a first survey of its server."""
    coordinator = ServerCoordinator(hass, entry)
    survey = await _async_first_survey(entry, coordinator.transport)
    provider = provider_for(entry.data.get(CONF_PROVIDER))
    capabilities = Capabilities(
        hass, entry.entry_id, provider, survey.report, survey.fingerprint
    )
    await capabilities.async_load()
    entry.async_on_unload(capabilities.async_close)
    coordinator.async_set_updated_data(survey)
    return RuntimeData(
        coordinator=coordinator,
        capabilities=capabilities,
        task_slots=asyncio.Semaphore(provider.concurrency),
        basis=setup_basis(entry),
    )


@callback
def _follow_model_issues(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> None:
    """Open the model issues now, follow every refresh, close them on unload."""
    issues = ModelIssues(hass, entry)
    issues.async_sync()
    coordinator = entry.runtime_data.coordinator
    entry.async_on_unload(coordinator.async_add_listener(issues.async_sync))
    entry.async_on_unload(issues.async_clear)


async def _async_first_survey(
    entry: OpenAICompatibleConfigEntry, transport: Transport
) -> Survey:
    """Return what the server has at setup, and why its list was not read."""
    listing, unread = await _async_listing(entry, transport)
    survey = await async_survey(entry, transport, listing)
    return replace(survey, unread=unread)


async def _async_listing(
    entry: OpenAICompatibleConfigEntry, transport: Transport
) -> tuple[ModelListing | None, str | None]:
    """Return the server's models, and why not all were read if they were not.

    A list too large is read up to its cap; failures retry later.
    """
    try:
        listing = await async_fetch_models(transport)
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
    if listing is None:
        # Some servers have no models endpoint; they still serve chat.
        LOGGER.debug("%s lists no models; chat still works", entry.title)
    elif listing.cut:
        size = mebibytes(MAX_LISTING_BYTES)
        LOGGER.warning(
            "%s lists more models than fit in %s; it is set up with the first %d",
            entry.title,
            size,
            len(listing.ids),
        )
        return listing, f"larger than {size}: the first {len(listing.ids)} read"
    return listing, None


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


async def _async_changed(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> None:
    """Reload after the entry changed; take a subentry's new settings in place.

    In place, the entities stay available: the server is read again (a new
    model's report) and every entity writes its state and device anew.
    """
    if setup_basis(entry) != entry.runtime_data.basis:
        await hass.config_entries.async_reload(entry.entry_id)
    else:
        await entry.runtime_data.coordinator.async_refresh()
