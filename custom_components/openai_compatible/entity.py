"""The base entity that owns the round trip between a chat log and the model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.helpers import device_registry as dr, llm
from homeassistant.helpers.entity import Entity

from .api import is_reasoning_model
from .chat_completions import (
    ChatCompletionsAdapter,
    RequestSettings,
    ToolSet,
    build_tool_set,
)
from .const import (
    CONF_CHAT_MODEL,
    CONF_MAX_TOKENS,
    CONF_PROVIDER,
    CONF_RECOMMENDED,
    CONF_STREAMING,
    CONF_TEMPERATURE,
    CONF_TOP_P,
    DOMAIN,
    LOGGER,
    MAX_TOOL_ROUNDS_CONVERSATION,
    PROVIDER_CUSTOM,
    PROVIDERS,
)
from .errors import AuthError, ModelError, ServerError

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry


def subentry_device_info(
    entry: OpenAICompatibleConfigEntry, subentry: ConfigSubentry
) -> dr.DeviceInfo:
    """Return the service device of a subentry, shared by all its entities."""
    provider = PROVIDERS.get(
        entry.data.get(CONF_PROVIDER, PROVIDER_CUSTOM), PROVIDERS[PROVIDER_CUSTOM]
    )
    return dr.DeviceInfo(
        identifiers={(DOMAIN, subentry.subentry_id)},
        name=subentry.title,
        manufacturer=provider.name,
        model=subentry.data.get(CONF_CHAT_MODEL),
        entry_type=dr.DeviceEntryType.SERVICE,
    )


class OpenAICompatibleEntity(Entity):
    """An entity of one subentry, talking to the entry's server."""

    _attr_has_entity_name = True
    _attr_name = None
    _tool_set_cache: tuple[llm.APIInstance | None, ToolSet] | None = None

    def __init__(
        self, entry: OpenAICompatibleConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Describe the entity and its service device."""
        self.entry = entry
        self.subentry = subentry
        self.provider = PROVIDERS.get(
            entry.data.get(CONF_PROVIDER, PROVIDER_CUSTOM), PROVIDERS[PROVIDER_CUSTOM]
        )
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = subentry_device_info(entry, subentry)

    @property
    def model(self) -> str:
        """Return the chat model of the subentry."""
        return str(self.subentry.data.get(CONF_CHAT_MODEL, ""))

    def request_settings(self) -> RequestSettings:
        """Return the request parameters the subentry asks for."""
        options = self.subentry.data
        tuned = not options.get(CONF_RECOMMENDED, True)
        return RequestSettings(
            model=self.model,
            max_tokens=options.get(CONF_MAX_TOKENS) if tuned else None,
            temperature=options.get(CONF_TEMPERATURE) if tuned else None,
            top_p=options.get(CONF_TOP_P) if tuned else None,
            reasoning_model=is_reasoning_model(self.model),
            prompt_cache_key=(
                self.subentry.subentry_id
                if self.provider.accepts_prompt_cache_key
                else None
            ),
            short_tool_call_ids=self.provider is PROVIDERS["mistral"],
            stream_usage=self.provider.accepts_stream_options,
            stream=bool(options.get(CONF_STREAMING, True)),
        )

    def _tool_set(self, llm_api: llm.APIInstance | None) -> ToolSet:
        """Return the tools in wire form, converted once per API instance.

        Home Assistant keeps a conversation's API instance between turns.
        """
        cached = self._tool_set_cache
        if cached is None or cached[0] is not llm_api:
            cached = (llm_api, build_tool_set(llm_api))
            self._tool_set_cache = cached
        return cached[1]

    @contextmanager
    def _server_errors(self) -> Iterator[None]:
        """Start reauthentication when the server refuses our key."""
        usage = self.entry.runtime_data.usage
        try:
            yield
        except AuthError as err:
            usage.record_error(self.subentry.subentry_id)
            LOGGER.warning("The server refused the API key; starting reauth")
            self.entry.async_start_reauth(self.hass)
            raise AuthError("reauth_started") from err
        except ServerError as err:
            usage.record_error(self.subentry.subentry_id)
            LOGGER.debug("Model server error: %s", err.translation_key)
            raise

    async def _async_handle_chat_log(
        self,
        chat_log: conversation.ChatLog,
        *,
        max_rounds: int = MAX_TOOL_ROUNDS_CONVERSATION,
        response_format: dict[str, Any] | None = None,
        instructions: tuple[conversation.UserContent, str] | None = None,
    ) -> None:
        """Run the model on the chat log until no tool result is unanswered."""
        usage = self.entry.runtime_data.usage
        adapter = ChatCompletionsAdapter(
            self.hass,
            self.entry.runtime_data.client,
            self.request_settings(),
            self._tool_set(chat_log.llm_api),
            on_usage=partial(usage.record_usage, self.subentry.subentry_id),
        )
        with self._server_errors():
            for _ in range(max_rounds):
                usage.record_request(self.subentry.subentry_id)
                body = await adapter.async_build_body(
                    chat_log, response_format=response_format, instructions=instructions
                )
                async for _content in chat_log.async_add_delta_content_stream(
                    self.entity_id, adapter.async_stream(chat_log, body)
                ):
                    pass
                if not chat_log.unresponded_tool_results:
                    return
        raise ModelError("max_tool_rounds", rounds=str(max_rounds))
