"""Assist conversation agents, one per conversation subentry."""

from __future__ import annotations

from functools import partial
from typing import Final, Literal, override

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT, MATCH_ALL
from homeassistant.helpers import llm

from . import OpenAICompatibleConfigEntry
from .const import DOMAIN, SUBENTRY_CONVERSATION
from .entity import OpenAICompatibleEntity
from .errors import ModelError
from .fallback import async_converse_with, handover
from .platforms import setup_per_subentry

PARALLEL_UPDATES = 0

# The one line a turn from a voice satellite (or another device) adds to the
# agent's instructions; typed chats keep their instructions as they are.
SPOKEN_ANSWER: Final = (
    "Your answer is spoken aloud: answer in plain sentences, without markdown, "
    "lists, tables, code or emoji."
)


async_setup_entry = setup_per_subentry(
    lambda entry, subentry: [OpenAICompatibleConversationEntity(entry, subentry)],
    SUBENTRY_CONVERSATION,
)


class OpenAICompatibleConversationEntity(
    conversation.ConversationEntity,
    conversation.AbstractConversationAgent,
    OpenAICompatibleEntity,
):
    """A conversation agent that streams its answers."""

    _attr_translation_key = "conversation"

    def __init__(
        self, entry: OpenAICompatibleConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Set up the agent; it controls the home when an LLM API is chosen."""
        super().__init__(entry, subentry)
        self._attr_supports_streaming = self.request_settings().stream
        if subentry.data.get(CONF_LLM_HASS_API):
            self._attr_supported_features = (
                conversation.ConversationEntityFeature.CONTROL
            )

    @property
    @override
    def supported_languages(self) -> list[str] | Literal["*"]:
        """Return every language: the model decides."""
        return MATCH_ALL

    @override
    async def async_added_to_hass(self) -> None:
        """Register as an Assist agent."""
        await super().async_added_to_hass()
        conversation.async_set_agent(self.hass, self.entry, self)

    @override
    async def async_will_remove_from_hass(self) -> None:
        """Unregister the agent."""
        conversation.async_unset_agent(self.hass, self.entry)
        await super().async_will_remove_from_hass()

    @override
    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Answer one user message."""
        options = self.subentry.data
        try:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                options.get(CONF_LLM_HASS_API),
                _instructions(options.get(CONF_PROMPT), user_input),
                user_input.extra_system_prompt,
            )
        except conversation.ConverseError as err:
            return err.as_conversation_result()

        async def answer() -> conversation.ConversationResult:
            await self._async_handle_chat_log(chat_log)
            if not _answered(chat_log):
                raise ModelError("no_answer")
            return conversation.async_get_result_from_chat_log(user_input, chat_log)

        if (other := handover(self.entity_id, self.subentry, chat_log)) is None:
            return await answer()
        return await other.async_run(
            self.available,
            answer,
            partial(
                async_converse_with, self.hass, user_input, chat_log.conversation_id
            ),
        )


def _instructions(
    prompt: str | None, user_input: conversation.ConversationInput
) -> str | None:
    """Return the agent's instructions, told to speak where a device listens."""
    if not (user_input.satellite_id or user_input.device_id):
        return prompt
    return f"{prompt or llm.DEFAULT_INSTRUCTIONS_PROMPT}\n{SPOKEN_ANSWER}"


def _answered(chat_log: conversation.ChatLog) -> bool:
    """Tell whether the model said or did anything since the user spoke."""
    for content in reversed(chat_log.content):
        if isinstance(content, conversation.UserContent):
            return False
        # An empty answer the model chose is a silent one.
        if isinstance(content, conversation.AssistantContent) and (
            content.content is not None or content.tool_calls
        ):
            return True
    return False
