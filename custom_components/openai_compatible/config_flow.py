"""Config flow: pick a server, connect to it, and set up agents and tasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, override

from homeassistant import data_entry_flow
from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryData,
    ConfigSubentryFlow,
    OptionsFlow,
)
from homeassistant.const import CONF_API_KEY
from homeassistant.core import callback
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectSelectorMode,
)
import probatio
from yarl import URL

from .const import (
    CONF_API,
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    CONF_TIMEOUT,
    DEFAULT_TIMEOUT_SECONDS,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .flows.chat_subentry import ModelSubentryFlowHandler, chat_defaults
from .flows.common import (
    Input,
    choice,
    dropdown,
    entry_title,
    followed_title,
    is_generated_entry_title,
    subentry_title,
)
from .flows.connection import (
    API_KEY_SELECTOR,
    api_key_field,
    async_check_server,
    entry_data,
    server_schema,
)
from .flows.voice_subentry import VoiceSubentryFlowHandler, voice_defaults
from .models.capabilities import WireApi, api_setting
from .models.listing import lasting_models
from .models.names import ModelKind, models_first, pick_chat_model
from .models.providers import (
    PROVIDER_CUSTOM,
    PROVIDERS,
    async_answering_presets,
    provider_for,
)

DEFAULT_PROVIDER: Final = "openai"
TIMEOUT_SELECTOR: Final = NumberSelector(
    NumberSelectorConfig(
        min=10, max=3600, step=1, unit_of_measurement="s", mode=NumberSelectorMode.BOX
    )
)


def _server(base_url: str) -> tuple[str, str, int | None, str]:
    url = URL(base_url)
    host = (url.host or "").lower()
    # The loopback's names reach the same server.
    host = "localhost" if host in ("localhost", "127.0.0.1", "::1") else host
    return url.scheme, host, url.port, url.path.rstrip("/")


class OpenAICompatibleConfigFlow(ConfigFlow, domain=DOMAIN):
    """Set up, reauthenticate or reconfigure one OpenAI-compatible server."""

    VERSION = 1
    # 1.2: no unique id (duplicates refused by data); titles name server and model.
    MINOR_VERSION = 2
    # The preset chosen, then the server's data and models once it answered.
    _provider_key = DEFAULT_PROVIDER
    _data: dict[str, Any]
    _models: list[str]

    @override
    async def async_step_user(self, user_input: Input = None) -> ConfigFlowResult:
        """Ask which kind of server to connect to."""
        if user_input is not None:
            self._provider_key = user_input[CONF_PROVIDER]
            return await self.async_step_connect()
        # Local servers answering on this machine first, then any other, then presets.
        found = await async_answering_presets(self.hass)
        rest = [key for key in PROVIDERS if key not in (*found, PROVIDER_CUSTOM)]
        default = found[0] if found else DEFAULT_PROVIDER
        field = choice(CONF_PROVIDER, [*found, PROVIDER_CUSTOM, *rest])
        names = ", ".join(PROVIDERS[key].name for key in found)
        return self.async_show_form(
            step_id="user_found" if found else "user",
            data_schema=probatio.Schema(
                {probatio.Required(CONF_PROVIDER, default=default): field}
            ),
            description_placeholders={"found": names} if found else None,
        )

    # Where local servers were found, the same step under another text.
    async_step_user_found = async_step_user

    async def async_step_connect(self, user_input: Input = None) -> ConfigFlowResult:
        """Ask where the server is and for its key; check it and create the entry."""
        preset = provider_for(self._provider_key)
        errors: dict[str, str] = {}
        placeholders = {
            "provider": preset.name,
            "port": str(URL(preset.base_url).port or "") if preset.base_url else "",
            "listen": preset.listen_command or "",
            "message": "",
        }
        if user_input is not None:
            data = entry_data(user_input, self._provider_key, errors)
            models = await self._check(data, errors, placeholders)
            if data is not None and models is not None:
                self._data, self._models = data, models
                chat_model = pick_chat_model(models, preset.recommended_model)
                if chat_model is None and not voice_defaults(models):
                    return await self.async_step_model()
                return self._async_create(None)
        variants = {  # the first that fits
            "connect_custom": self._provider_key == PROVIDER_CUSTOM,
            "connect_local": bool(preset.listen_command),
            "connect_azure": preset.asks_for_resource,
        }
        step_id = next((step for step, fits in variants.items() if fits), "connect")
        return self.async_show_form(
            step_id=step_id,
            data_schema=self.add_suggested_values_to_schema(
                server_schema(preset.api_key_required),
                {CONF_BASE_URL: preset.base_url or None, **(user_input or {})},
            ),
            errors=errors,
            description_placeholders=placeholders,
        )

    # The connect step's variants differ in their hints only.
    async_step_connect_azure = async_step_connect
    async_step_connect_custom = async_step_connect
    async_step_connect_local = async_step_connect

    async def async_step_model(self, user_input: Input = None) -> ConfigFlowResult:
        """Ask for the model when the server names no chat model."""
        if user_input is not None:
            return self._async_create(user_input[CONF_CHAT_MODEL].strip())
        field = dropdown(models_first(self._models, ModelKind.CHAT))
        schema = probatio.Schema({probatio.Required(CONF_CHAT_MODEL): field})
        return self.async_show_form(step_id="model", data_schema=schema)

    def _async_create(self, chat_model: str | None) -> ConfigFlowResult:
        """Create the entry with an agent and a task, and voice where evident (or alone)."""
        title = entry_title(self._data, {other.title for other in self._others()})
        preset = provider_for(self._data.get(CONF_PROVIDER))
        lasting = lasting_models(self._models, preset.shutdowns)
        preferred = chat_model or preset.recommended_model
        voice = voice_defaults(lasting)
        chat = [
            (kind, chat_defaults(kind, lasting, preferred))
            for kind in (SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK)
            if not voice or pick_chat_model(lasting, preferred) is not None
        ]
        subentries = [
            ConfigSubentryData(
                subentry_type=kind,
                data=data,
                title=subentry_title(kind, title, self._data, data),
                unique_id=None,
            )
            for kind, data in (*chat, *voice)
        ]
        return self.async_create_entry(
            title=title, data=self._data, subentries=subentries
        )

    async def async_step_reauth(
        self, entry_data: Mapping[str, Any]
    ) -> ConfigFlowResult:
        """Start re-authentication after the server refused the key."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: Input = None
    ) -> ConfigFlowResult:
        """Ask for a new key and check it against the same server."""
        entry = self._get_reauth_entry()
        errors: dict[str, str] = {}
        placeholders = {
            "name": entry.title,
            "base_url": entry.data[CONF_BASE_URL],
            "message": "",
        }
        if user_input is not None:
            data = {k: v for k, v in entry.data.items() if k != CONF_API_KEY}
            if api_key := (user_input.get(CONF_API_KEY) or "").strip():
                data[CONF_API_KEY] = api_key
            if await self._check(data, errors, placeholders) is not None:
                return self._async_update_entry(entry, data, entry.title)
        required = provider_for(entry.data.get(CONF_PROVIDER)).api_key_required
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=probatio.Schema({api_key_field(required): API_KEY_SELECTOR}),
            errors=errors,
            description_placeholders=placeholders,
        )

    async def async_step_reconfigure(
        self, user_input: Input = None
    ) -> ConfigFlowResult:
        """Change the address and/or the key of a server; forget what was learned."""
        entry = self._get_reconfigure_entry()
        errors: dict[str, str] = {}
        placeholders = {"name": entry.title, "message": ""}
        if user_input is not None:
            provider_key = entry.data.get(CONF_PROVIDER, PROVIDER_CUSTOM)
            data = entry_data(user_input, provider_key, errors)
            # An empty key keeps the old one, but only on the same origin.
            if data and CONF_API_KEY not in data and entry.data.get(CONF_API_KEY):
                new, old = URL(data[CONF_BASE_URL]), URL(entry.data[CONF_BASE_URL])
                if (new.scheme, new.host, new.port) == (old.scheme, old.host, old.port):
                    data[CONF_API_KEY] = entry.data[CONF_API_KEY]
                elif provider_for(provider_key).api_key_required:
                    errors[CONF_API_KEY] = "api_key_required"
            if data and await self._check(data, errors, placeholders) is not None:
                title = entry.title
                if is_generated_entry_title(title, entry.data):
                    title = entry_title(data, {other.title for other in self._others()})
                for subentry in entry.subentries.values():
                    followed = followed_title(subentry, entry, new_entry=(title, data))
                    self.hass.config_entries.async_update_subentry(
                        entry, subentry, title=followed
                    )
                # What was learned was about the old server; one not loaded holds none.
                if entry.state is ConfigEntryState.LOADED:
                    entry.runtime_data.capabilities.forget()
                return self._async_update_entry(entry, data, title)
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                server_schema(False),
                {CONF_BASE_URL: (user_input or entry.data)[CONF_BASE_URL]},
            ),
            errors=errors,
            description_placeholders=placeholders,
        )

    def _others(self) -> list[ConfigEntry]:
        return [
            entry
            for entry in self._async_current_entries(include_ignore=False)
            if entry.entry_id != self.context.get("entry_id")
        ]

    async def _check(
        self,
        data: dict[str, Any] | None,
        errors: dict[str, str],
        placeholders: dict[str, str],
    ) -> list[str] | None:
        """Return the server's models; None where errors (already or now) tell why not."""
        if data is None or errors:
            return None
        api_key, server = data.get(CONF_API_KEY), _server(data[CONF_BASE_URL])
        for entry in self._others():
            same = _server(entry.data[CONF_BASE_URL]) == server
            if same and api_key in (None, entry.data.get(CONF_API_KEY)):
                raise data_entry_flow.AbortFlow(
                    "already_configured_key" if api_key else "already_configured",
                    {"name": entry.title},
                )
        models = await async_check_server(self.hass, data, errors, placeholders)
        return None if errors else models

    def _async_update_entry(
        self, entry: ConfigEntry, data: dict[str, Any], title: str
    ) -> ConfigFlowResult:
        """Save the new settings; a loaded entry reloads through its update listener."""
        if entry.update_listeners:
            return self.async_update_and_abort(entry, data=data, title=title)
        return self.async_update_reload_and_abort(entry, data=data, title=title)

    @staticmethod
    @callback
    @override
    def async_get_options_flow(config_entry: ConfigEntry) -> OptionsFlow:
        return ConnectionOptionsFlow()

    @classmethod
    @callback
    @override
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        return {
            SUBENTRY_CONVERSATION: ModelSubentryFlowHandler,
            SUBENTRY_AI_TASK: ModelSubentryFlowHandler,
            SUBENTRY_STT: VoiceSubentryFlowHandler,
            SUBENTRY_TTS: VoiceSubentryFlowHandler,
        }


class ConnectionOptionsFlow(OptionsFlow):
    """Change how long one round trip may take, and the API it goes over."""

    async def async_step_init(self, user_input: Input = None) -> ConfigFlowResult:
        """Show the options; save them as given."""
        if user_input is not None:
            return self.async_create_entry(data=user_input)
        options = self.config_entry.options
        timeout = options.get(CONF_TIMEOUT, DEFAULT_TIMEOUT_SECONDS)
        api = api_setting(options.get(CONF_API))
        apis = choice(CONF_API, WireApi, SelectSelectorMode.LIST)
        schema = probatio.Schema(
            {
                probatio.Required(CONF_TIMEOUT, default=timeout): TIMEOUT_SELECTOR,
                probatio.Required(CONF_API, default=api): apis,
            }
        )
        return self.async_show_form(step_id="init", data_schema=schema)
