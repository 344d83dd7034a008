"""AI task entities, one per AI task subentry."""

from __future__ import annotations

from typing import override

from homeassistant.components import ai_task, conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import OpenAICompatibleConfigEntry
from .api import ServerError
from .const import MAX_TOOL_ROUNDS_AI_TASK, SUBENTRY_AI_TASK
from .entity import OpenAICompatibleEntity

PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: OpenAICompatibleConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a task entity for each AI task subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_AI_TASK:
            async_add_entities(
                [OpenAICompatibleTaskEntity(entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


class OpenAICompatibleTaskEntity(ai_task.AITaskEntity, OpenAICompatibleEntity):
    """Generates data through the shared model round trip."""

    _attr_supported_features = (
        ai_task.AITaskEntityFeature.GENERATE_DATA
        | ai_task.AITaskEntityFeature.SUPPORT_ATTACHMENTS
    )

    @override
    async def _async_generate_data(
        self, task: ai_task.GenDataTask, chat_log: conversation.ChatLog
    ) -> ai_task.GenDataTaskResult:
        """Answer a generate-data task with the model's text."""
        await self._async_handle_chat_log(chat_log, max_rounds=MAX_TOOL_ROUNDS_AI_TASK)
        last = chat_log.content[-1]
        if not isinstance(last, conversation.AssistantContent) or not last.content:
            raise ServerError("no_answer")
        return ai_task.GenDataTaskResult(
            conversation_id=chat_log.conversation_id, data=last.content
        )
