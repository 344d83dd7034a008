"""Steps that change a server set up already: a new key, a new address.

The base of the config flow: it also holds what creating an entry shares
with them (the duplicate check, the titles, the server check).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant import data_entry_flow
from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
)
from homeassistant.const import CONF_API_KEY
import probatio

from ..const import CONF_BASE_URL, CONF_PROVIDER
from ..models.capabilities import async_forget
from ..models.providers import PROVIDER_CUSTOM, provider_for
from .connection import (
    API_KEY_SELECTOR,
    URL_SELECTOR,
    api_key_field,
    async_check_server,
    entry_data,
    same_origin,
    same_server,
)
from .titles import (
    entry_title,
    is_generated_entry_title,
    is_generated_title,
    subentry_title,
)


class ServerEntryFlow(ConfigFlow):
    """Reauthenticate or reconfigure a server's entry; check a server's settings."""

    async def async_step_reauth(
        self, entry_data: Mapping[str, Any]
    ) -> ConfigFlowResult:
        """Start re-authentication after the server refused the key."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for a new key and check it against the same server."""
        entry = self._get_reauth_entry()
        preset = provider_for(entry.data.get(CONF_PROVIDER))
        errors: dict[str, str] = {}
        placeholders = {
            "name": entry.title,
            "base_url": entry.data[CONF_BASE_URL],
            "message": "",
        }

        if user_input is not None:
            data = {**entry.data}
            data.pop(CONF_API_KEY, None)
            if api_key := (user_input.get(CONF_API_KEY) or "").strip():
                data[CONF_API_KEY] = api_key
            self._abort_if_duplicate(data)
            await async_check_server(self.hass, data, errors, placeholders)
            if not errors:
                return self._async_update_entry(entry, data, entry.title)

        schema = probatio.Schema(
            {api_key_field(preset.api_key_required): API_KEY_SELECTOR}
        )
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=schema,
            errors=errors,
            description_placeholders=placeholders,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the address and/or the key of a server; forget what was learned."""
        entry = self._get_reconfigure_entry()
        errors: dict[str, str] = {}
        placeholders = {"name": entry.title, "message": ""}

        if user_input is not None:
            data = self._reconfigured_data(entry, user_input, errors)
            if data is not None and not errors:
                self._abort_if_duplicate(data)
                await async_check_server(self.hass, data, errors, placeholders)
                if not errors:
                    return await self._async_reconfigure(entry, data)

        schema = probatio.Schema(
            {
                probatio.Required(CONF_BASE_URL): URL_SELECTOR,
                probatio.Optional(probatio.Secret(CONF_API_KEY)): API_KEY_SELECTOR,
            }
        )
        suggested = {CONF_BASE_URL: (user_input or entry.data)[CONF_BASE_URL]}
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(schema, suggested),
            errors=errors,
            description_placeholders=placeholders,
        )

    @staticmethod
    def _reconfigured_data(
        entry: ConfigEntry, user_input: Mapping[str, Any], errors: dict[str, str]
    ) -> dict[str, Any] | None:
        """Return the entry's new data from the form; note what is wrong with it.

        An empty key keeps the current one, but only on the same origin: the
        key must never go to another server.
        """
        provider_key = entry.data.get(CONF_PROVIDER, PROVIDER_CUSTOM)
        data = entry_data(user_input, provider_key)
        if data is None:
            errors[CONF_BASE_URL] = "invalid_url"
        elif CONF_API_KEY not in data and entry.data.get(CONF_API_KEY):
            if same_origin(data[CONF_BASE_URL], entry.data[CONF_BASE_URL]):
                data[CONF_API_KEY] = entry.data[CONF_API_KEY]
            elif provider_for(provider_key).api_key_required:
                errors[CONF_API_KEY] = "api_key_required"
        return data

    async def _async_reconfigure(
        self, entry: ConfigEntry, data: dict[str, Any]
    ) -> ConfigFlowResult:
        """Save a server's new settings; titles the integration gave follow it."""
        title = entry.title
        if is_generated_entry_title(title, entry.data):
            title = entry_title(data, self._other_titles())
        for subentry in entry.subentries.values():
            kind, options = subentry.subentry_type, subentry.data
            if is_generated_title(
                subentry.title, kind, entry.title, entry.data, options
            ):
                self.hass.config_entries.async_update_subentry(
                    entry, subentry, title=subentry_title(kind, title, data, options)
                )
        if entry.state is ConfigEntryState.LOADED:
            # What was learned was about the old server.
            entry.runtime_data.capabilities.forget()
        else:
            await async_forget(self.hass, entry.entry_id)
        return self._async_update_entry(entry, data, title)

    def _other_titles(self) -> set[str]:
        """Return the titles of the other entries, which a new title must not repeat."""
        return {
            entry.title
            for entry in self._async_current_entries(include_ignore=False)
            if entry.entry_id != self.context.get("entry_id")
        }

    def _abort_if_duplicate(self, data: Mapping[str, Any]) -> None:
        """Abort, naming the entry, when another reaches the same server with the key.

        Without a key, any other entry for the same server counts: a server
        that needs no key is already reachable through it.
        """
        api_key = data.get(CONF_API_KEY)
        for entry in self._async_current_entries(include_ignore=False):
            if (
                entry.entry_id != self.context.get("entry_id")
                and same_server(entry.data[CONF_BASE_URL], data[CONF_BASE_URL])
                and api_key in (None, entry.data.get(CONF_API_KEY))
            ):
                raise data_entry_flow.AbortFlow(
                    "already_configured_key" if api_key else "already_configured",
                    {"name": entry.title},
                )

    def _async_update_entry(
        self, entry: ConfigEntry, data: dict[str, Any], title: str
    ) -> ConfigFlowResult:
        """Save the new settings and reload the entry."""
        if entry.update_listeners:
            # A loaded entry reloads itself through its update listener.
            return self.async_update_and_abort(entry, data=data, title=title)
        return self.async_update_reload_and_abort(entry, data=data, title=title)
