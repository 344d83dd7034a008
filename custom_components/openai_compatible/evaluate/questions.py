"""Evaluation questions, and what asking them shares."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
import string
from typing import Any, Final, Literal, TypeGuard, cast

from homeassistant.components import ai_task

from ..errors import ModelError
from ..media.attachments import LoadedFile
from ..models.capabilities import ModelCapabilities
from ..net.readers import read_number
from ..net.shapes import ChatBody, ChatMessage, ChatPart, JsonObject
from ..net.transport import Budget, RequestSettings, Transport
from ..redact import shown
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


def finite(value: object) -> TypeGuard[float]:
    """Tell whether a value is a finite number a float holds (not a bool)."""
    return read_number(value) is not None


def probability(value: Any, question: Question) -> float:
    """Return a probability, refusing anything but a number from 0 to 1."""
    if not finite(value) or not 0 <= value <= 1:
        raise ModelError(
            "evaluate_probability_out_of_range",
            question=question.key,
            value=shown(str(value)),
        )
    return float(value)


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
    evidence: str = ""
    files: list[LoadedFile] = field(default_factory=list)
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
