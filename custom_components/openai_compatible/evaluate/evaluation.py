"""ai_task.evaluate: the questions, what asking them shares, and OpenAI's `/decisions`."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
import string
from typing import Any, Final, Literal, cast

from homeassistant.components import ai_task, conversation

from ..const import LOGGER, Feature
from ..errors import ModelError, RequestRejectedError, ServerError, shown
from ..media.attachments import LoadedFile
from ..models.capabilities import ModelCapabilities
from ..net.readers import async_read_body, read_number
from ..net.shapes import ChatBody, ChatMessage, ChatPart, JsonObject
from ..net.transport import Budget, RequestSettings, Transport, parse_json
from ..wire.chat_completions import attachment_part
from ..wire.round_trip import RoundTrip

type Path = Literal["decisions", "logprobs", "stated"]
type Kind = Literal["noul", "choice", "score"]

# Enough, and readable: 0.3, not 0.30000000000000004.
DECIMALS: Final = 4
SYSTEM_PROMPT: Final = (
    "You evaluate evidence from a smart home: its state, given as JSON or text, "
    "and any attached images. Answer the question exactly in the form it asks for."
)


# More questions than this in one task are refused, not queued.
MAX_QUESTIONS: Final = 32
DECISIONS_MAX_LEVELS: Final = 10
DECISIONS_MAX_IMAGES: Final = 128
DECISIONS_TOLERANCE: Final = 0.01
# The Decisions API's name of a kind, where it is not ours.
_TYPES: Final[dict[Kind, str]] = {"noul": "predicate"}


@dataclass(frozen=True, slots=True)
class Question:
    """One question with its options in order: yes/no, alternatives or levels."""

    key: str
    kind: Kind
    instructions: str
    # (name, description): ("yes", ""), ("no", ""); a choice's keys; ("0", level), ...
    options: tuple[tuple[str, str], ...]

    @classmethod
    def from_task(cls, key: str, question: ai_task.EvaluationQuestion) -> Question:
        """Return the question in the form every path uses."""
        if question["type"] == "noul":
            options: tuple[tuple[str, str], ...] = (("yes", ""), ("no", ""))
        elif question["type"] == "choice":
            options = tuple(question["criteria"].items())
        else:
            options = tuple(
                (str(i), text) for i, text in enumerate(question["criteria"])
            )
        return cls(key, question["type"], question["instructions"], options)

    @property
    def names(self) -> list[str]:
        """Return the option names: the keys of stated answers."""
        return [name for name, _ in self.options]

    def labels(self) -> list[str] | None:
        """Return the one-token labels of the options, if there are enough."""
        if self.kind == "noul":
            return ["Yes", "No"]
        if self.kind == "choice":
            letters = list(string.ascii_uppercase[: len(self.options)])
            return letters if len(self.options) <= 26 else None
        return self.names if len(self.options) <= 10 else None

    def levels(self) -> str:
        """Return the levels of a score question, lowest first, with their numbers."""
        lines = "\n".join(f"{name}: {text}" for name, text in self.options)
        return f"Levels, from lowest to highest:\n{lines}"

    def answer(self, probabilities: list[float]) -> ai_task.EvaluationAnswer:
        """Return Home Assistant's answer for a distribution over the options."""
        if self.kind == "noul":
            return ai_task.NoulAnswer(noul=round(probabilities[0], DECIMALS))
        # Each rounded alone: the sum stays 1 within rounding.
        shown_probabilities = [round(p, DECIMALS) for p in probabilities]
        if self.kind == "choice":
            best = max(range(len(probabilities)), key=probabilities.__getitem__)
            return ai_task.ChoiceAnswer(
                choice=self.names[best],
                probabilities=dict(zip(self.names, shown_probabilities, strict=True)),
            )
        score = sum(index * p for index, p in enumerate(probabilities))
        return ai_task.ScoreAnswer(
            score=round(score, DECIMALS), probabilities=shown_probabilities
        )


@dataclass(slots=True)
class Outcome:
    """How one question was answered: the distribution and where it came from."""

    probabilities: list[float]
    path: Path
    # The distribution as the server or model gave it, per label, before checks.
    raw: dict[str, float]
    extra: dict[str, Any] = field(default_factory=dict)


def probability(value: Any, question: Question) -> float:
    """Return a probability, refusing anything but a number from 0 to 1."""
    if (number := read_number(value)) is None or not 0 <= number <= 1:
        raise ModelError(
            "evaluate_probability_out_of_range",
            question=question.key,
            value=shown(str(value)),
        )
    return number


def normalised(
    question: Question, probabilities: list[float], tolerance: float
) -> list[float]:
    """Return the distribution scaled to add up to 1; refuse one far from it."""
    total = sum(probabilities)
    if abs(total - 1) > tolerance:
        raise ModelError(
            "evaluate_not_normalized", question=question.key, total=f"{total:g}"
        )
    return [p / total for p in probabilities]


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """What every request of one evaluation shares; `skipped`: why paths were not."""

    round_trip: RoundTrip
    transport: Transport
    capabilities: ModelCapabilities
    settings: RequestSettings
    budget: Budget
    slots: asyncio.Semaphore
    evidence: str
    files: list[LoadedFile]
    skipped: defaultdict[str, list[str]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def skip(self, question: Question, reason: str) -> None:
        """Note why a path did not answer the question."""
        self.skipped[question.key].append(reason)

    async def async_choice(self, body: ChatBody) -> JsonObject:
        """Send one chat request when a slot of the entry is free; return its choice."""
        async with self.slots:
            answer = await self.round_trip.async_complete(body)
        choices = answer.get("choices")
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            raise ModelError("no_answer")
        return cast("JsonObject", choices[0])

    def messages(self, prompt: str) -> list[ChatMessage]:
        """Return the messages: evidence first (shared by all questions), then one."""
        content: str | list[ChatPart] = f"{self.evidence}\n\n{prompt}"
        if self.files:
            content = [
                {"type": "text", "text": self.evidence},
                *map(attachment_part, self.files),
                {"type": "text", "text": prompt},
            ]
        user: ChatMessage = {"role": "user", "content": content}
        return [{"role": "system", "content": SYSTEM_PROMPT}, user]


def trace(
    name: str, ask: Ask, questions: list[Question], outcomes: dict[str, Outcome]
) -> None:
    """Tell the debug log and an active conversation trace how an evaluation went."""
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
        async with (
            ask.slots,
            ask.transport.async_open(
                "POST", "/decisions", budget=ask.budget, body=body, sent=frozenset(sent)
            ) as opened,
        ):
            raw = await async_read_body(opened.aiter_bytes())
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
        "type": _TYPES.get(question.kind, question.kind),
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
    if kind != _TYPES.get(question.kind, question.kind):
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
