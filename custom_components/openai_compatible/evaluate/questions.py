"""Evaluation questions: their options, one-token labels, prompts and answers.

Each question ends up as a distribution over its options (noul: yes and no; a
choice: its alternatives; a score: its levels, lowest first); every path that
finds one checks it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import string
from typing import Any, Final, Literal

from homeassistant.components import ai_task

from ..errors import ModelError
from ..redact import shown

type Path = Literal["decisions", "logprobs", "stated"]
type Kind = Literal["noul", "choice", "score"]

# One-token labels exist for this many options.
MAX_LETTERS: Final = 26
MAX_DIGITS: Final = 10
# Answers carry probabilities to this many decimals: enough, and readable
# (0.3, not 0.30000000000000004).
DECIMALS: Final = 4


@dataclass(frozen=True, slots=True)
class Question:
    """One question with its options in order: yes/no, alternatives or levels."""

    key: str
    kind: Kind
    instructions: str
    # (name, description): noul ("yes", ""), ("no", ""); a choice its keys; a
    # score its levels as ("0", criterion), ("1", criterion), ...
    options: tuple[tuple[str, str], ...]

    @classmethod
    def from_task(cls, key: str, question: ai_task.EvaluationQuestion) -> Question:
        """Return the question in the form every path uses."""
        if question["type"] == "noul":
            return cls(key, "noul", question["instructions"], (("yes", ""), ("no", "")))
        if question["type"] == "choice":
            return cls(
                key,
                "choice",
                question["instructions"],
                tuple(question["criteria"].items()),
            )
        return cls(
            key,
            "score",
            question["instructions"],
            tuple(
                (str(index), text) for index, text in enumerate(question["criteria"])
            ),
        )

    @property
    def names(self) -> list[str]:
        """Return the option names: the keys of stated answers."""
        return [name for name, _ in self.options]

    def labels(self) -> list[str] | None:
        """Return the one-token labels of the options, if there are enough."""
        if self.kind == "noul":
            return ["Yes", "No"]
        if self.kind == "choice":
            count = len(self.options)
            return (
                list(string.ascii_uppercase[:count]) if count <= MAX_LETTERS else None
            )
        if len(self.options) <= MAX_DIGITS:
            return self.names
        return None

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


def label_prompt(question: Question, labels: list[str]) -> str:
    """Return the question asking for a one-token label."""
    head = f"Question: {question.instructions}\n\n"
    if question.kind == "noul":
        return f"{head}Answer Yes or No."
    if question.kind == "choice":
        lines = "\n".join(
            f"{label}) {name}: {description}"
            for label, (name, description) in zip(labels, question.options, strict=True)
        )
        return f"{head}Options:\n{lines}\n\nAnswer with the letter of the option only."
    return (
        f"{head}{_levels(question)}\n\n"
        f"Answer with the number of the level only, from 0 to {len(labels) - 1}."
    )


def stated_prompt(question: Question) -> str:
    """Return the question asking for a JSON object of probabilities."""
    head = f"Question: {question.instructions}\n\n"
    ask = "as probabilities from 0 to 1 that add up to 1, in a JSON object"
    if question.kind == "noul":
        return (
            f"{head}State how likely the answer is yes and how likely it is no, "
            f'{ask} with the keys "yes" and "no".'
        )
    if question.kind == "choice":
        lines = "\n".join(f"- {name}: {text}" for name, text in question.options)
        return (
            f"{head}Options:\n{lines}\n\nState how likely each option is the answer, "
            f"{ask} with the name of each option as its key."
        )
    return (
        f"{head}{_levels(question)}\n\nState how likely each level is, "
        f"{ask} with the number of each level as its key."
    )


def _levels(question: Question) -> str:
    """Return the levels of a score question, lowest first, with their numbers."""
    lines = "\n".join(f"{name}: {text}" for name, text in question.options)
    return f"Levels, from lowest to highest:\n{lines}"


def probability(value: Any, question: Question) -> float:
    """Return a probability, refusing anything but a number from 0 to 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= 1
    ):
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
