"""ai_task.evaluate: each question to the first path that answers it, `/decisions` first."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Final

from homeassistant.components import ai_task, conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps

from ..const import LOGGER
from ..errors import (
    InputError,
    ModelError,
    RequestRejectedError,
    ServerError,
    TranslatedError,
)
from ..features import Feature
from ..media.attachments import async_load_attachments
from ..net.shapes import JsonObject
from ..net.transport import parse_json
from .chat import async_answer
from .questions import Ask, Kind, Outcome, Question, normalised, probability

# More questions than this in one task are refused, not queued.
MAX_QUESTIONS: Final = 32
DECISIONS_MAX_LEVELS: Final = 10
DECISIONS_MAX_IMAGES: Final = 128
DECISIONS_TOLERANCE: Final = 0.01
_TYPES: Final[dict[Kind, str]] = {
    "noul": "predicate",
    "choice": "choice",
    "score": "score",
}


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
    evidence = f"Task: {task.name}"
    if isinstance(task.state, str):
        evidence += f"\n\nState:\n{task.state}"
    elif task.state is not None:
        evidence += f"\n\nState (JSON):\n{json_dumps(task.state)}"
    ask = replace(server, evidence=evidence)
    if task.attachments:
        ask = replace(ask, files=await async_load_attachments(hass, task.attachments))
    outcomes = await async_decide(ask, questions)
    rest = [q for q in questions if q.key not in outcomes]
    try:
        # One failed question fails the task: the others are cancelled.
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(async_answer(ask, q)) for q in rest]
    except* TranslatedError as errors:
        # Its own cause, not the group, is what explains it.
        error = errors.exceptions[0]
        raise error from error.__cause__
    outcomes.update((q.key, task.result()) for q, task in zip(rest, tasks, strict=True))
    _trace(task.name, ask, questions, outcomes)
    return ai_task.EvaluationTaskResult(
        answers={q.key: q.answer(outcomes[q.key].probabilities) for q in questions}
    )


def _trace(
    name: str, ask: Ask, questions: list[Question], outcomes: dict[str, Outcome]
) -> None:
    """Tell the debug log and an active conversation trace how it went."""
    detail = {
        "task_name": name,
        "model": ask.settings.model,
        "questions": {
            q.key: {
                "path": outcome.path,
                "raw": outcome.raw,
                **outcome.extra,
                "probabilities": dict(zip(q.names, outcome.probabilities, strict=True)),
                "skipped": ask.skipped[q.key],
            }
            for q in questions
            for outcome in [outcomes[q.key]]
        },
    }
    LOGGER.debug("Evaluation: %s", detail)
    conversation.async_conversation_trace_append(
        conversation.ConversationTraceEventType.AGENT_DETAIL, {"evaluation": detail}
    )


# The Decisions path: OpenAI's `POST /decisions`, all the questions in one request.
async def async_decide(ask: Ask, questions: list[Question]) -> dict[str, Outcome]:
    """Return the outcomes of the questions the Decisions API answers."""
    if ask.capabilities.refuses(Feature.DECISIONS):
        _not_decided(ask, questions, "not offered by this server")
        return {}
    if len(ask.files) > DECISIONS_MAX_IMAGES or not all(
        file.mime_type.startswith("image/") for file in ask.files
    ):
        _not_decided(ask, questions, "the attachments are not all images, or too many")
        return {}
    levels = [
        q
        for q in questions
        if q.kind == "score" and len(q.options) > DECISIONS_MAX_LEVELS
    ]
    _not_decided(ask, levels, "too many levels")
    if not (asked := [q for q in questions if q not in levels]):
        return {}
    sent = {Feature.DECISIONS} | ({Feature.IMAGE_INPUT} if ask.files else set())
    content: list[JsonObject] = [{"type": "input_text", "text": ask.evidence}]
    content.extend(
        {"type": "input_image", "image_url": file.data_url} for file in ask.files
    )
    body: JsonObject = {
        "model": ask.settings.model,
        "input": [{"role": "user", "content": content}],
        "questions": [_question(q) for q in asked],
    }
    try:
        async with ask.slots:
            raw = await ask.transport.async_read(
                "POST",
                "/decisions",
                budget=ask.budget,
                body=body,
                sent=frozenset(sent),
            )
        data = parse_json(raw)
    except RequestRejectedError as err:
        # Learned only when the answer says the route is missing.
        reason = f"refused ({err.status}): {err.server_message}"
        lesson = err.lesson_source if err.feature is Feature.DECISIONS else None
    except ServerError as err:
        if err.translation_key not in ("permission_denied", "answer_not_json"):
            raise
        reason = lesson = str(err.translation_key)
    else:
        if isinstance(data, dict) and isinstance(data.get("answers"), list):
            ask.capabilities.learn_proven(Feature.DECISIONS)
            return _outcomes(data["answers"], asked)
        # A catch-all page (some proxies answer any path with 200).
        reason = lesson = "the answer is not a Decision"
    _not_decided(ask, asked, reason, lesson)
    return {}


def _not_decided(
    ask: Ask, questions: list[Question], reason: str, lesson: str | None = None
) -> None:
    """Send the questions on; with a lesson, the model has no Decisions API."""
    if lesson is not None:
        ask.capabilities.learn_refused(Feature.DECISIONS, lesson)
    for question in questions:
        ask.skip(question, f"decisions: {reason}")


def _question(question: Question) -> JsonObject:
    base: JsonObject = {
        "type": _TYPES[question.kind],
        "name": question.key,
        "instructions": question.instructions,
    }
    if question.kind == "choice":
        base["choices"] = [
            {"value": name, "description": text} for name, text in question.options
        ]
    elif question.kind == "score":
        base["levels"] = [{"label": text} for _, text in question.options]
    return base


def _outcomes(answers: list[Any], questions: list[Question]) -> dict[str, Outcome]:
    """Return the outcome of each question from a Decision, refusing bad ones."""
    if not all(isinstance(answer, dict) for answer in answers):
        raise ModelError(
            "evaluate_failed", problem="an answer of the decision is not an object"
        )
    asked = {q.key: q for q in questions}
    by_key: dict[str, JsonObject] = {}
    for position, answer in enumerate(answers):
        name = answer.get("name")
        if name is None and position < len(questions):
            name = questions[position].key  # unnamed: answers come in order
        if not isinstance(name, str) or name not in asked:
            raise ModelError("evaluate_unknown_answer", name=str(name)[:100])
        if name in by_key:
            raise ModelError("evaluate_duplicate_answer", question=name)
        by_key[name] = answer
    outcomes: dict[str, Outcome] = {}
    for question in questions:
        if (answer := by_key.get(question.key)) is None:
            raise ModelError("evaluate_missing_answer", question=question.key)
        outcomes[question.key] = _outcome(question, answer)
    return outcomes


def _outcome(question: Question, answer: JsonObject) -> Outcome:
    kind = answer.get("type")
    if kind == "refusal":
        raise ModelError("evaluate_refused", question=question.key)
    if kind != _TYPES[question.kind]:
        raise ModelError(
            "evaluate_wrong_answer_type", question=question.key, type=str(kind)[:100]
        )
    if question.kind == "noul":
        yes = probability(answer.get("probability"), question)
        return Outcome([yes, 1 - yes], "decisions", {"yes": yes})
    entries = answer.get("probabilities")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ModelError("evaluate_wrong_options", question=question.key)
    keys = [_option(question, entry) for entry in entries]
    if len(keys) != len(question.names) or set(keys) != set(question.names):
        raise ModelError("evaluate_wrong_options", question=question.key)
    raw = {
        str(key): probability(entry.get("probability"), question)
        for key, entry in zip(keys, entries, strict=True)
    }
    probabilities = normalised(
        question, [raw[name] for name in question.names], DECISIONS_TOLERANCE
    )
    return Outcome(probabilities, "decisions", raw)


def _option(question: Question, entry: JsonObject) -> str | None:
    """Return the option an entry answers for: a choice's value, a level's index+label."""
    value = entry.get("value")
    if question.kind == "choice":
        return value if isinstance(value, str) else None
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 0 <= value < len(question.options)
        and entry.get("label") == question.options[value][1]
    ):
        return question.options[value][0]
    return None
