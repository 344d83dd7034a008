"""Config flow: pick a server, connect to it, and set up agents and tasks.

The steps that change an entry, and the subentry and options flows, live in
flows/.
"""

from __future__ import annotations

from typing import Any, override

from homeassistant.config_entries import (
    ConfigEntry,
    ConfigFlowResult,
    ConfigSubentryFlow,
    OptionsFlow,
)
from homeassistant.core import callback
import probatio
from yarl import URL

from .const import (
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .flows.chat_subentry import ModelSubentryFlowHandler
from .flows.connection import (
    API_KEY_SELECTOR,
    URL_SELECTOR,
    api_key_field,
    async_check_server,
    connect_step,
    entry_data,
)
from .flows.defaults import default_subentries, voice_defaults
from .flows.fields import choice, dropdown
from .flows.options import ConnectionOptionsFlow
from .flows.server_entry import ServerEntryFlow
from .flows.titles import entry_title
from .flows.voice_subentry import (
    SpeechToTextSubentryFlowHandler,
    TextToSpeechSubentryFlowHandler,
)
from .models.discovery import async_answering_presets
from .models.kinds import chat_models_first, pick_chat_model
from .models.providers import PROVIDER_CUSTOM, PROVIDERS, provider_for

DEFAULT_PROVIDER = "openai"


class OpenAICompatibleConfigFlow(ServerEntryFlow, domain=DOMAIN):
    """Set up a connection to one OpenAI-compatible server."""

    VERSION = 1
    # 1.2: no unique id (duplicates are refused by data); subentry titles name
    # server and model.
    MINOR_VERSION = 2

    def __init__(self) -> None:
        """Start with no provider chosen."""
        self._provider_key = DEFAULT_PROVIDER
        self._data: dict[str, Any] = {}
        self._models: list[str] = []

    @override
    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask which kind of server to connect to."""
        if user_input is not None:
            self._provider_key = user_input[CONF_PROVIDER]
            return await self._async_connect(None)

        # Local servers answering on this machine come first, then any other
        # server, then the remaining presets.
        found = await async_answering_presets(self.hass)
        rest = [key for key in PROVIDERS if key not in (*found, PROVIDER_CUSTOM)]
        schema = probatio.Schema(
            {
                probatio.Required(
                    CONF_PROVIDER, default=found[0] if found else DEFAULT_PROVIDER
                ): choice(CONF_PROVIDER, [*found, PROVIDER_CUSTOM, *rest])
            }
        )
        if not found:
            return self.async_show_form(step_id="user", data_schema=schema)
        return self.async_show_form(
            step_id="user_found",
            data_schema=schema,
            description_placeholders={
                "found": ", ".join(PROVIDERS[key].name for key in found)
            },
        )

    # Where local servers were found, the same step under another text.
    async_step_user_found = async_step_user

    async def async_step_connect(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Connect to a hosted service, or any server under the step's variants."""
        return await self._async_connect(user_input)

    # The connect step's variants differ in their hints only (see connect_step).
    async_step_connect_azure = async_step_connect
    async_step_connect_custom = async_step_connect
    async_step_connect_local = async_step_connect

    async def _async_connect(
        self, user_input: dict[str, Any] | None
    ) -> ConfigFlowResult:
        """Ask where the server is and for its key; validate and create."""
        preset = provider_for(self._provider_key)
        errors: dict[str, str] = {}
        placeholders = {
            "provider": preset.name,
            "port": str(URL(preset.base_url).port or "") if preset.base_url else "",
            "listen": preset.listen_command or "",
            "message": "",
        }

        if user_input is not None:
            data = entry_data(user_input, self._provider_key)
            if data is None:
                errors[CONF_BASE_URL] = "invalid_url"
            else:
                self._abort_if_duplicate(data)
                models = await async_check_server(self.hass, data, errors, placeholders)
                if not errors:
                    self._data, self._models = data, models
                    if pick_chat_model(
                        models, preset.recommended_model
                    ) is None and not voice_defaults(models):
                        return await self.async_step_model()
                    return self._async_create(None)

        schema = probatio.Schema(
            {
                probatio.Required(CONF_BASE_URL): URL_SELECTOR,
                api_key_field(preset.api_key_required): API_KEY_SELECTOR,
            }
        )
        suggested = {CONF_BASE_URL: preset.base_url or None}
        return self.async_show_form(
            step_id=connect_step(self._provider_key),
            data_schema=self.add_suggested_values_to_schema(
                schema, {**suggested, **(user_input or {})}
            ),
            errors=errors,
            description_placeholders=placeholders,
        )

    async def async_step_model(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the model when the server names no chat model."""
        if user_input is not None:
            return self._async_create(user_input[CONF_CHAT_MODEL].strip())
        schema = probatio.Schema(
            {
                probatio.Required(CONF_CHAT_MODEL): dropdown(
                    chat_models_first(self._models)
                )
            }
        )
        return self.async_show_form(step_id="model", data_schema=schema)

    def _async_create(self, chat_model: str | None) -> ConfigFlowResult:
        """Create the entry with one agent and one task."""
        title = entry_title(self._data, self._other_titles())
        return self.async_create_entry(
            title=title,
            data=self._data,
            subentries=default_subentries(title, self._data, self._models, chat_model),
        )

    @staticmethod
    @callback
    @override
    def async_get_options_flow(config_entry: ConfigEntry) -> OptionsFlow:
        """Return the flow of the entry's connection options."""
        return ConnectionOptionsFlow()

    @classmethod
    @callback
    @override
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        """Return the kinds of things each server can host."""
        return {
            SUBENTRY_CONVERSATION: ModelSubentryFlowHandler,
            SUBENTRY_AI_TASK: ModelSubentryFlowHandler,
            SUBENTRY_STT: SpeechToTextSubentryFlowHandler,
            SUBENTRY_TTS: TextToSpeechSubentryFlowHandler,
        }
