"""An AI task handed to the task its subentry names; the flows' check for a loop.

The one place that reads ai_task's internals (`DATA_COMPONENT`,
`internal_async_generate_image`): its image helper stores the image and gives
no bytes, so an image handover runs the entity as that helper does. A turn's
handover itself is `entity.Handover`.
"""

from __future__ import annotations

from homeassistant.components import ai_task
from homeassistant.components.ai_task.const import DATA_COMPONENT
from homeassistant.components.ai_task.permissions import async_check_permissions
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.chat_session import async_get_chat_session

from .const import CONF_FALLBACK, DOMAIN


async def async_generate_data_with(
    hass: HomeAssistant, task: ai_task.GenDataTask, context: Context | None, target: str
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
    """Return the AI task entity if it generates images."""
    entity = hass.data[DATA_COMPONENT].get_entity(entity_id)
    feature = ai_task.AITaskEntityFeature.GENERATE_IMAGE
    return entity if entity and feature in entity.supported_features else None


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
