"""Assist conversation agents, one per conversation subentry."""

from __future__ import annotations

import asyncio
import time
from typing import Final, Literal, override

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT, MATCH_ALL
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.json import json_dumps
from homeassistant.util.ulid import ulid_now

from . import OpenAICompatibleConfigEntry
from .const import CONF_STREAMING, DOMAIN, LOGGER, SUBENTRY_CONVERSATION
from .entity import OpenAICompatibleEntity, handover
from .errors import ModelError

PARALLEL_UPDATES = 0

# A turn from a device (a voice satellite) adds this line; typed chats do not.
SPOKEN_ANSWER: Final = (
    "Your answer is spoken aloud: answer in plain sentences, without markdown, "
    "lists, tables, code or emoji."
)
# Within this many seconds, the commands in between keep the prompt cached.
WARM_AGAIN_AFTER: Final = 30.0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: OpenAICompatibleConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add an agent for each conversation subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_CONVERSATION:
            async_add_entities(
                [OpenAICompatibleConversationEntity(entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


class OpenAICompatibleConversationEntity(
    conversation.ConversationEntity,
    conversation.AbstractConversationAgent,
    OpenAICompatibleEntity,
):
    """A conversation agent that streams its answers."""

    _attr_translation_key = "conversation"
    # Every language: the model decides.
    supported_languages: Literal["*"] = MATCH_ALL
    _warming: asyncio.Task[None] | None = None
    # The prompt last sent ahead (its hash), and when.
    _warmed: tuple[int, float] | None = None

    @property
    @override
    def supports_streaming(self) -> bool:
        return bool(self.subentry.data.get(CONF_STREAMING, True))

    @property
    @override
    def supported_features(self) -> conversation.ConversationEntityFeature:
        if self.subentry.data.get(CONF_LLM_HASS_API):
            return conversation.ConversationEntityFeature.CONTROL
        return conversation.ConversationEntityFeature(0)

    @override
    async def async_added_to_hass(self) -> None:
        await super().async_added_to_hass()
        conversation.async_set_agent(self.hass, self.entry, self)

    @override
    async def async_will_remove_from_hass(self) -> None:
        conversation.async_unset_agent(self.hass, self.entry)
        await super().async_will_remove_from_hass()

    @override
    async def async_prepare(self, language: str | None = None) -> None:
        """Send the start of a spoken command's prompt ahead, as speech-to-text begins."""
        if not self.capabilities.caches_prompts or (
            self._warming is not None and not self._warming.done()
        ):
            return
        self._warming = self.entry.async_create_background_task(
            self.hass, self._async_warm_up(language), f"{self.entity_id} warm-up"
        )

    async def _async_warm_up(self, language: str | None) -> None:
        """Send the first request of a spoken command: no device, no words."""
        chat_log = conversation.ChatLog(self.hass, ulid_now())
        chat_log.content.append(conversation.UserContent(""))
        context = llm.LLMContext(
            DOMAIN, Context(), language, conversation.DOMAIN, None, self.entity_id
        )
        options = self.subentry.data
        try:
            await chat_log.async_provide_llm_data(
                context,
                options.get(CONF_LLM_HASS_API),
                _spoken(options.get(CONF_PROMPT)),
            )
            tool_set = self._offer(chat_log).tool_set()
            round_trip = self.adapter(tool_set, chat_log)
            body = await round_trip.async_build_body(chat_log)
            digest = hash(json_dumps(body))
            if self._warmed and self._warmed[0] == digest:
                if time.monotonic() - self._warmed[1] < WARM_AGAIN_AFTER:
                    return
            await round_trip.async_warm(body)
            self._warmed = (digest, time.monotonic())
        except HomeAssistantError as err:
            LOGGER.debug("%s sent nothing ahead: %s", self.entity_id, err)

    @override
    async def _async_handle_message(
        self, user_input: conversation.ConversationInput, chat_log: conversation.ChatLog
    ) -> conversation.ConversationResult:
        options = self.subentry.data
        if self._warming is not None:
            # On a server of several slots, a request sent meanwhile finds a cold cache.
            await asyncio.wait({self._warming})
        prompt = options.get(CONF_PROMPT)
        if user_input.satellite_id or user_input.device_id:
            prompt = _spoken(prompt)  # a device listens
        try:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                options.get(CONF_LLM_HASS_API),
                prompt,
                user_input.extra_system_prompt,
            )
        except conversation.ConverseError as err:
            return err.as_conversation_result()

        async def answer() -> conversation.ConversationResult:
            await self._async_handle_chat_log(chat_log)
            if not _answered(chat_log):
                raise ModelError("no_answer")
            return conversation.async_get_result_from_chat_log(user_input, chat_log)

        async def ask_other(agent_id: str) -> conversation.ConversationResult:
            return await conversation.async_converse(
                self.hass,
                user_input.text,
                chat_log.conversation_id,
                user_input.context,
                language=user_input.language,
                agent_id=agent_id,
                device_id=user_input.device_id,
                satellite_id=user_input.satellite_id,
                extra_system_prompt=user_input.extra_system_prompt,
            )

        if (other := handover(self.entity_id, self.subentry, chat_log)) is None:
            return await answer()
        return await other.async_run(self.available, answer, ask_other)


def _spoken(prompt: str | None) -> str:
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
