"""Diagnostics of an OpenAI Compatible entry: settings, models, capabilities."""

from __future__ import annotations

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_API_KEY, CONF_PROMPT
from homeassistant.core import HomeAssistant

from . import OpenAICompatibleConfigEntry
from .const import CONF_CHAT_MODEL

ENTRY_TO_REDACT = {CONF_API_KEY}
SUBENTRY_TO_REDACT = {CONF_API_KEY, CONF_PROMPT}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> dict[str, object]:
    """Return what helps to understand a report, without secrets."""
    diagnostics: dict[str, object] = {
        "title": entry.title,
        "entry_version": f"{entry.version}.{entry.minor_version}",
        "state": entry.state.value,
        "data": async_redact_data(entry.data, ENTRY_TO_REDACT),
        "options": async_redact_data(entry.options, ENTRY_TO_REDACT),
        "subentries": [
            {
                "subentry_type": subentry.subentry_type,
                "title": subentry.title,
                "data": async_redact_data(subentry.data, SUBENTRY_TO_REDACT),
            }
            for subentry in entry.subentries.values()
        ],
    }
    if entry.state is ConfigEntryState.LOADED:
        diagnostics["models"] = entry.runtime_data.models
        if unread := entry.runtime_data.coordinator.data.unread:
            diagnostics["models_unread"] = unread
        diagnostics["capabilities"] = entry.runtime_data.capabilities.diagnostics(
            str(subentry.data[CONF_CHAT_MODEL])
            for subentry in entry.subentries.values()
            if subentry.data.get(CONF_CHAT_MODEL)
        )
    return diagnostics
