"""Handing a turn to the agent or task a subentry names when our server cannot."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

from homeassistant.components import ai_task, conversation
from homeassistant.components.ai_task.const import DATA_COMPONENT
from homeassistant.components.ai_task.permissions import async_check_permissions
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.chat_session import async_get_chat_session

from .const import CONF_FALLBACK, DOMAIN, LOGGER
from .errors import ConnectError, RateLimitedError, ServerError

_handing_over: ContextVar[frozenset[str]] = ContextVar(
    "openai_compatible_handing_over", default=frozenset()
)

_SERVER_FAILURES: Final = frozenset(
    {
        "api_error",
        "answer_cut_short",
        "gateway_failed",
        "server_failed",
        "server_unavailable",
    }
)


def server_failed(err: ServerError) -> bool:
    """Tell whether another server might answer: ours is gone, slow, busy or failing."""
    if isinstance(err, ConnectError | RateLimitedError):
        return True
    return type(err) is ServerError and err.translation_key in _SERVER_FAILURES


@dataclass(frozen=True, slots=True)
class Handover:
    """One agent or task, the fallback it names, and the chat log of its turn."""

    source: str
    target: str
    chat_log: conversation.ChatLog

    async def async_run[T](
        self,
        available: bool,
        own: Callable[[], Awaitable[T]],
        other: Callable[[str], Awaitable[T]],
    ) -> T:
        """Answer with `own`, or with `other` (given the fallback) if it fails."""
        reason = "unavailable"
        if available:
            try:
                return await own()
            except ServerError as err:
                # Only while the attempt left nothing after the user's message.
                if not server_failed(err) or not isinstance(
                    self.chat_log.content[-1], conversation.UserContent
                ):
                    raise
                reason = str(err.translation_key)
        LOGGER.info(
            "%s cannot answer (%s); %s answers instead",
            self.source,
            reason,
            self.target,
        )
        self.chat_log.async_trace(
            {"fallback": {"from": self.source, "to": self.target, "reason": reason}}
        )
        token = _handing_over.set(_handing_over.get() | {self.source})
        try:
            return await other(self.target)
        finally:
            _handing_over.reset(token)


def handover(
    source: str, subentry: ConfigSubentry, chat_log: conversation.ChatLog
) -> Handover | None:
    """Return the subentry's handover, or None: no fallback, or one in the chain."""
    target = subentry.data.get(CONF_FALLBACK)
    chain = _handing_over.get()
    if not target or source in chain or target in chain:
        return None
    return Handover(source, str(target), chat_log)


async def async_converse_with(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    conversation_id: str,
    target: str,
) -> conversation.ConversationResult:
    """Ask another agent the user's message, in the same conversation."""
    return await conversation.async_converse(
        hass,
        user_input.text,
        conversation_id,
        user_input.context,
        language=user_input.language,
        agent_id=target,
        device_id=user_input.device_id,
        satellite_id=user_input.satellite_id,
        extra_system_prompt=user_input.extra_system_prompt,
    )


async def async_generate_data_with(
    hass: HomeAssistant,
    task: ai_task.GenDataTask,
    context: Context | None,
    target: str,
) -> ai_task.GenDataTaskResult:
    """Give the same generate-data task to another AI task entity."""
    return await ai_task.async_generate_data(
        hass,
        task_name=task.name,
        entity_id=target,
        instructions=task.instructions,
        structure=task.structure,
        attachments=[
            {
                "media_content_id": attachment.media_content_id,
                "media_content_type": attachment.mime_type,
            }
            for attachment in task.attachments or ()
        ]
        or None,
        llm_api=task.llm_api,
        context=context,
    )


async def async_generate_image_with(
    hass: HomeAssistant,
    task: ai_task.GenImageTask,
    context: Context | None,
    target: str,
) -> ai_task.GenImageTaskResult:
    """Give the same image task to another AI task entity that `makes_images`."""
    # As Home Assistant's helper does before it runs the entity.
    await async_check_permissions(hass, target, None, context)
    entity = _image_entity(hass, target)
    assert entity is not None
    with async_get_chat_session(hass, context=context) as session:
        return await entity.internal_async_generate_image(session, task, context)


def makes_images(hass: HomeAssistant, entity_id: str) -> bool:
    """Tell whether an AI task entity generates images."""
    return _image_entity(hass, entity_id) is not None


def _image_entity(hass: HomeAssistant, entity_id: str) -> ai_task.AITaskEntity | None:
    """Return the AI task entity if it generates images.

    The one read of ai_task's private entity component: its image helper stores the
    image and gives no bytes, so a fallback runs the entity as that helper does.
    """
    entity = hass.data[DATA_COMPONENT].get_entity(entity_id)
    if (
        entity
        and ai_task.AITaskEntityFeature.GENERATE_IMAGE in entity.supported_features
    ):
        return entity
    return None


def closes_loop(hass: HomeAssistant, source: str | None, target: str) -> bool:
    """Tell whether naming `target` as the fallback of `source` makes a loop of ours."""
    seen: set[str] = set()
    current: str | None = target
    while current is not None and current not in seen:
        if current == source:
            return True
        seen.add(current)
        current = _fallback_of(hass, current)
    return False


def _fallback_of(hass: HomeAssistant, entity_id: str) -> str | None:
    entity = er.async_get(hass).async_get(entity_id)
    if entity is None or entity.platform != DOMAIN or entity.config_entry_id is None:
        return None
    entry = hass.config_entries.async_get_entry(entity.config_entry_id)
    subentry = entry.subentries.get(entity.config_subentry_id or "") if entry else None
    return subentry.data.get(CONF_FALLBACK) if subentry else None
