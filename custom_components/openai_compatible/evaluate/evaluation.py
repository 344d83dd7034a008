"""ai_task.evaluate: each question goes to the first path that answers it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Final

from homeassistant.components import ai_task, conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps

from ..const import LOGGER
from ..errors import InputError, TranslatedError
from ..features import Feature
from ..media.attachments import async_load_attachments
from .decisions import async_decide
from .labels import async_read_labels
from .questions import Ask, Outcome, Question
from .stated import async_state

# More questions than this in one task are refused, not queued.
MAX_QUESTIONS: Final = 32


async def async_evaluate(
    hass: HomeAssistant, task: ai_task.EvaluationTask, server: Ask
) -> ai_task.EvaluationTaskResult:
    """Answer all questions: the Decisions API first, then chat completions."""
    if len(task.questions) > MAX_QUESTIONS:
        raise InputError(
            "evaluate_too_many_questions",
            count=str(len(task.questions)),
            limit=str(MAX_QUESTIONS),
        )
    questions = [Question.from_task(key, q) for key, q in task.questions.items()]
    ask = replace(server, evidence=_evidence_text(task))
    if task.attachments:
        ask = replace(ask, files=await async_load_attachments(hass, task.attachments))
    outcomes = await async_decide(ask, questions)
    rest = [q for q in questions if q.key not in outcomes]
    try:
        # One failed question fails the task: the others are cancelled.
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_async_answer(ask, q)) for q in rest]
    except ExceptionGroup as errors:
        if (translated := errors.subgroup(TranslatedError)) is None:
            raise
        error: BaseException = translated
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        # Its own cause, not the group, is what explains it.
        raise error from error.__cause__
    outcomes.update((q.key, task.result()) for q, task in zip(rest, tasks, strict=True))
    _trace(task.name, ask, questions, outcomes)
    return ai_task.EvaluationTaskResult(
        answers={q.key: q.answer(outcomes[q.key].probabilities) for q in questions}
    )


async def _async_answer(ask: Ask, question: Question) -> Outcome:
    labels = question.labels()
    if ask.capabilities.refuses(Feature.LOGPROBS):
        ask.skip(question, "logprobs: the server gives none")
    elif ask.capabilities.reasoning:
        ask.skip(question, "logprobs: reasoning model")
    elif labels is None:
        ask.skip(question, "logprobs: too many options")
    elif outcome := await async_read_labels(ask, question, labels):
        return outcome
    return await async_state(ask, question)


def _trace(
    name: str, ask: Ask, questions: list[Question], outcomes: dict[str, Outcome]
) -> None:
    """Tell the debug log and an active conversation trace how it went."""
    detail = {
        "task_name": name,
        "model": ask.settings.model,
        "questions": {
            q.key: {
                "path": outcomes[q.key].path,
                "raw": outcomes[q.key].raw,
                **outcomes[q.key].extra,
                "probabilities": dict(
                    zip(q.names, outcomes[q.key].probabilities, strict=True)
                ),
                "skipped": ask.skipped[q.key],
            }
            for q in questions
        },
    }
    LOGGER.debug("Evaluation: %s", detail)
    conversation.async_conversation_trace_append(
        conversation.ConversationTraceEventType.AGENT_DETAIL, {"evaluation": detail}
    )


def _evidence_text(task: ai_task.EvaluationTask) -> str:
    text = f"Task: {task.name}"
    if isinstance(task.state, str):
        text += f"\n\nState:\n{task.state}"
    elif task.state is not None:
        text += f"\n\nState (JSON):\n{json_dumps(task.state)}"
    return text
