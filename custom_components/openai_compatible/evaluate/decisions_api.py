"""The Decisions path of an evaluation: OpenAI's `POST /decisions`.

All eligible questions go in one request. Scores of more than
DECISIONS_MAX_LEVELS levels, PDFs and more than DECISIONS_MAX_IMAGES images
are not sent there. The answer is checked question by question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..errors import ModelError
from ..media.attachments import LoadedFile
from ..net.shapes import JsonObject
from .questions import Kind, Outcome, Question, normalised, probability

DECISIONS_MAX_LEVELS: Final = 10
DECISIONS_MAX_IMAGES: Final = 128
DECISIONS_TOLERANCE: Final = 0.01
_TYPES: Final[dict[Kind, str]] = {
    "noul": "predicate",
    "choice": "choice",
    "score": "score",
}


def files_fit(files: list[LoadedFile]) -> bool:
    """Tell whether the Decisions API takes these attachments."""
    return len(files) <= DECISIONS_MAX_IMAGES and all(
        file.mime_type.startswith("image/") for file in files
    )


def question_fits(question: Question) -> bool:
    """Tell whether the Decisions API takes this question."""
    return question.kind != "score" or len(question.options) <= DECISIONS_MAX_LEVELS


def decisions_body(
    model: str, evidence: str, files: list[LoadedFile], questions: list[Question]
) -> JsonObject:
    """Return the request for the questions, the evidence and images first."""
    content: list[JsonObject] = [{"type": "input_text", "text": evidence}]
    content.extend(
        {"type": "input_image", "image_url": file.data_url} for file in files
    )
    return {
        "model": model,
        "input": [{"role": "user", "content": content}],
        "questions": [_question(q) for q in questions],
    }


def _question(question: Question) -> JsonObject:
    """Return the Decisions API form of a question."""
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


def is_decision(data: Any) -> bool:
    """Tell a Decision from another answer (some proxies answer any path)."""
    return isinstance(data, dict) and isinstance(data.get("answers"), list)


def read_decision(
    answers: list[Any], questions: Sequence[Question]
) -> dict[str, Outcome]:
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
    """Return one question's outcome from its Decisions API answer."""
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
    if question.kind == "choice":
        keys = [
            value if isinstance(value := entry.get("value"), str) else None
            for entry in entries
        ]
    else:
        keys = [_level_key(question, entry) for entry in entries]
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


def _level_key(question: Question, entry: JsonObject) -> str | None:
    """Return the option name of a score level the server answered for, if ours."""
    value = entry.get("value")
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 0 <= value < len(question.options)
        and entry.get("label") == question.options[value][1]
    ):
        return question.options[value][0]
    return None
