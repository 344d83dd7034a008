"""AI task entities: data, images and evaluations."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import asdict
from functools import partial
from typing import Any, Final, override

from homeassistant.components import ai_task, conversation
from homeassistant.components.ai_task.const import DATA_COMPONENT
from homeassistant.components.ai_task.permissions import async_check_permissions
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers.chat_session import async_get_chat_session
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.json import json_dumps
from homeassistant.util import slugify
import probatio

from . import OpenAICompatibleConfigEntry
from .const import CONF_IMAGE_MODEL, LOGGER, MAX_TOOL_ROUNDS_AI_TASK, SUBENTRY_AI_TASK
from .entity import OpenAICompatibleEntity, handover
from .errors import InputError, ModelError, TranslatedError
from .evaluate.chat import async_answer
from .evaluate.evaluation import MAX_QUESTIONS, Ask, Question, async_decide, trace
from .media.attachments import async_load_attachments
from .media.images import async_generate_image
from .net.transport import build_tool_set
from .structured.rungs import (
    StructuredRequest,
    StructureMismatch,
    async_climb,
    checked_answer,
    parse_json_answer,
)
from .structured.selector_schema import structure_to_json_schema
from .window.context_window import check_model_takes, learning_refusals

PARALLEL_UPDATES = 0

_SCHEMA_NAME_LENGTH: Final = 64
_REPAIR: Final = (
    "Your answer does not match the requested structure: {problem}. "
    "Answer again with only the JSON, nothing else."
)


async def async_setup_entry(
    hass: HomeAssistant,
    entry: OpenAICompatibleConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add an entity for each AI task subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_AI_TASK:
            async_add_entities(
                [OpenAICompatibleTaskEntity(entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


def schema_name(task_name: str) -> str:
    """Return a json_schema name the API accepts, from the task's name."""
    return slugify(task_name, separator="_")[:_SCHEMA_NAME_LENGTH] or "result"


type _TaskRun[T, R] = Callable[
    [OpenAICompatibleTaskEntity, T, conversation.ChatLog], Coroutine[Any, Any, R]
]


def _here_or_fallback[T, R](
    other: Callable[[HomeAssistant, T, Context | None, str], Awaitable[R]],
    takes: Callable[[HomeAssistant, str], object] = lambda hass, target: True,
) -> Callable[[_TaskRun[T, R]], _TaskRun[T, R]]:
    """Run a task here, or give it to the subentry's fallback (one that `takes` it)."""

    def decorate(own: _TaskRun[T, R]) -> _TaskRun[T, R]:
        async def run(
            self: OpenAICompatibleTaskEntity, task: T, chat_log: conversation.ChatLog
        ) -> R:
            fallback = handover(self.entity_id, self.subentry, chat_log)
            if fallback is None or not takes(self.hass, fallback.target):
                return await own(self, task, chat_log)
            return await fallback.async_run(
                self.available,
                partial(own, self, task, chat_log),
                partial(other, self.hass, task, self._context),
            )

        return run

    return decorate


async def _async_generate_data_with(
    hass: HomeAssistant, task: ai_task.GenDataTask, context: Context | None, target: str
) -> ai_task.GenDataTaskResult:
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


async def _async_generate_image_with(
    hass: HomeAssistant,
    task: ai_task.GenImageTask,
    context: Context | None,
    target: str,
) -> ai_task.GenImageTaskResult:
    """Run the other entity as Home Assistant's image helper does: it gives no bytes."""
    await async_check_permissions(hass, target, None, context)
    entity = _image_entity(hass, target)
    assert entity is not None
    with async_get_chat_session(hass, context=context) as session:
        return await entity.internal_async_generate_image(session, task, context)


def _image_entity(hass: HomeAssistant, entity_id: str) -> ai_task.AITaskEntity | None:
    entity = hass.data[DATA_COMPONENT].get_entity(entity_id)
    feature = ai_task.AITaskEntityFeature.GENERATE_IMAGE
    return entity if entity and feature in entity.supported_features else None


class OpenAICompatibleTaskEntity(ai_task.AITaskEntity, OpenAICompatibleEntity):
    """Generates data and images with the subentry's models."""

    _attr_translation_key = "ai_task_data"
    # An automation can wait for a server that asks to come back later.
    retry_wait = 60.0

    @property
    @override
    def supported_features(self) -> ai_task.AITaskEntityFeature:
        """Return the features of this subentry's models."""
        features = (
            ai_task.AITaskEntityFeature.GENERATE_DATA
            | ai_task.AITaskEntityFeature.SUPPORT_ATTACHMENTS
            | ai_task.AITaskEntityFeature.EVALUATE
        )
        if self.image_model:
            features |= ai_task.AITaskEntityFeature.GENERATE_IMAGE
        return features

    @property
    def image_model(self) -> str:
        """Return the image model of the subentry, empty when it has none."""
        return str(self.subentry.data.get(CONF_IMAGE_MODEL) or "").strip()

    @override
    @_here_or_fallback(_async_generate_data_with)
    async def _async_generate_data(
        self, task: ai_task.GenDataTask, chat_log: conversation.ChatLog
    ) -> ai_task.GenDataTaskResult:
        if task.structure is not None:
            data = await self._async_structured(task.name, task.structure, chat_log)
        else:
            await self._async_handle_chat_log(
                chat_log,
                max_rounds=MAX_TOOL_ROUNDS_AI_TASK,
                slots=self.runtime.task_slots,
            )
            if not (data := _answer(chat_log)):
                raise ModelError("no_answer")
        return ai_task.GenDataTaskResult(
            conversation_id=chat_log.conversation_id, data=data
        )

    async def _async_structured(
        self, name: str, structure: probatio.Schema, chat_log: conversation.ChatLog
    ) -> Any:
        """Ask for JSON of the structure, parse and validate it; repair once."""
        llm_api = chat_log.llm_api
        serializer = llm_api.custom_serializer if llm_api else None
        schema = structure_to_json_schema(structure, serializer)
        # The task's own message: rung instructions are added to it.
        task_content = next(
            content
            for content in reversed(chat_log.content)
            if isinstance(content, conversation.UserContent)
        )

        async def attempt(request: StructuredRequest) -> None:
            text = request.instructions
            await self._async_handle_chat_log(
                chat_log,
                max_rounds=MAX_TOOL_ROUNDS_AI_TASK,
                slots=self.runtime.task_slots,
                response_format=request.response_format,
                instructions=(task_content, text) if text else None,
            )

        request, _ = await async_climb(
            self.capabilities,
            schema_name(name),
            schema,
            attempt,
            # With tools in the request, a rejection may be about their mix.
            learn=llm_api is None,
        )
        try:
            return checked_answer(
                parse_json_answer(_answer(chat_log)), structure, schema
            )
        except StructureMismatch as err:
            LOGGER.debug("Asking again for the structure: %s", err)
            chat_log.async_add_user_content(
                conversation.UserContent(_REPAIR.format(problem=err))
            )
        await attempt(request)
        try:
            return checked_answer(
                parse_json_answer(_answer(chat_log)), structure, schema
            )
        except StructureMismatch as err:
            raise ModelError("structured_output_invalid", problem=str(err)) from err

    @override
    async def _async_evaluate(
        self, task: ai_task.EvaluationTask
    ) -> ai_task.EvaluationTaskResult:
        """Each question to the first path that answers it: `/decisions`, then chat."""
        capabilities = self.capabilities
        check_model_takes(capabilities, tools=False, attachments=task.attachments or ())
        round_trip = self.adapter(build_tool_set(None), None, chat=True)
        questions = [Question.from_task(key, q) for key, q in task.questions.items()]
        evidence = f"Task: {task.name}"
        if isinstance(task.state, str):
            evidence += f"\n\nState:\n{task.state}"
        elif task.state is not None:
            evidence += f"\n\nState (JSON):\n{json_dumps(task.state)}"
        with self._server_errors(), learning_refusals(capabilities):
            if len(questions) > MAX_QUESTIONS:
                raise InputError(
                    "evaluate_too_many_questions",
                    count=str(len(questions)),
                    limit=str(MAX_QUESTIONS),
                )
            ask = Ask(
                round_trip=round_trip,
                transport=self.runtime.transport,
                capabilities=capabilities,
                settings=self.request_settings(),
                budget=self.budget(),
                slots=self.runtime.task_slots,
                evidence=evidence,
                files=await async_load_attachments(self.hass, task.attachments),
            )
            outcomes = await async_decide(ask, questions)
            rest = [q for q in questions if q.key not in outcomes]
            try:
                # One failed question fails the task: the others are cancelled.
                async with asyncio.TaskGroup() as group:
                    answers = [group.create_task(async_answer(ask, q)) for q in rest]
            except ExceptionGroup as errors:
                # A translated error is what the user is told, alone: the
                # group would reach Home Assistant untranslated.
                if (translated := errors.subgroup(TranslatedError)) is None:
                    raise
                # Its own cause, not the group, is what explains it (none nest).
                error = translated.exceptions[0]
                raise error from error.__cause__
        outcomes.update((q.key, a.result()) for q, a in zip(rest, answers, strict=True))
        trace(task.name, ask, questions, outcomes)
        return ai_task.EvaluationTaskResult(
            answers={q.key: q.answer(outcomes[q.key].probabilities) for q in questions}
        )

    @override
    @_here_or_fallback(_async_generate_image_with, _image_entity)
    async def _async_generate_image(
        self, task: ai_task.GenImageTask, chat_log: conversation.ChatLog
    ) -> ai_task.GenImageTaskResult:
        with self._server_errors():
            data, info = await async_generate_image(
                self.hass,
                self.runtime.transport,
                self.runtime.capabilities.model(self.image_model),
                prompt=task.instructions,
                attachments=task.attachments,
                budget=self.budget(),
            )
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(agent_id=self.entity_id, native=info)
        )
        return ai_task.GenImageTaskResult(
            image_data=data, conversation_id=chat_log.conversation_id, **asdict(info)
        )


def _answer(chat_log: conversation.ChatLog) -> str:
    last = chat_log.content[-1]
    if isinstance(last, conversation.AssistantContent) and last.content:
        return last.content
    return ""
