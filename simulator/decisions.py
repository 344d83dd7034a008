"""The Decisions API (`POST /v1/decisions`), as openai 3.26.0 types it."""

from __future__ import annotations

import json
import re
from typing import Any

from .tokens import count_tokens
from .wire import (
    APIError,
    decode_data_url,
    empty_array,
    invalid_type,
    invalid_value,
    missing,
    unknown_parameter,
)

MAX_IMAGES = 128
# A predicate's probability where the evidence says what the question asks,
# where it says the opposite, and where it says neither or both.
LIKELY, UNLIKELY, UNSURE = 0.8, 0.2, 0.5
# States and their opposites, both ways.
_OPPOSITES = {
    "open": "closed",
    "on": "off",
    "locked": "unlocked",
    "home": "away",
    "wet": "dry",
    "detected": "clear",
}
_OPPOSITES |= {later: first for first, later in _OPPOSITES.items()}
_TOP_PROBABILITY = 0.7
_QUESTION_TYPES = ("predicate", "choice", "score")
_QUESTION_KEYS = {
    "predicate": {"type", "instructions", "name"},
    "choice": {"type", "instructions", "name", "choices"},
    "score": {"type", "instructions", "name", "levels"},
}
_REQUEST_KEYS = {"input", "model", "questions", "safety_identifier"}
_DETAILS = ("low", "high", "auto", "original")


def validate(body: Any) -> None:
    """Raise APIError unless the body matches `DecisionCreateParams`."""
    if not isinstance(body, dict):
        raise APIError("We could not parse the JSON body of your request.")
    for key in body:
        if key not in _REQUEST_KEYS:
            raise unknown_parameter(key)
    for key in ("input", "model", "questions"):
        if key not in body:
            raise missing(key)
    if not isinstance(body["model"], str):
        raise invalid_type("model", "a string", body["model"])
    identifier = body.get("safety_identifier")
    if identifier is not None and not isinstance(identifier, str):
        raise invalid_type("safety_identifier", "a string", identifier)
    _validate_input(body["input"])
    questions = body["questions"]
    if not isinstance(questions, list):
        raise invalid_type("questions", "an array", questions)
    if not questions:
        raise empty_array("questions")
    names: set[str] = set()
    for index, question in enumerate(questions):
        _validate_question(question, f"questions[{index}]")
        if (name := question.get("name")) is not None:
            if name in names:
                raise APIError(
                    f"Invalid 'questions[{index}].name': duplicate question name '{name}'.",
                    param=f"questions[{index}].name",
                )
            names.add(name)


def _validate_input(value: Any) -> None:
    """Check the input: a string, or user messages of text and inline images."""
    if isinstance(value, str):
        return
    if not isinstance(value, list):
        raise invalid_type("input", "one of a string or array of objects", value)
    if not value:
        raise empty_array("input")
    images = 0
    for index, message in enumerate(value):
        param = f"input[{index}]"
        if not isinstance(message, dict):
            raise invalid_type(param, "an object", message)
        for key in message:
            if key not in ("role", "content", "type"):
                raise unknown_parameter(f"{param}.{key}")
        if message.get("role") != "user":
            raise invalid_value(f"{param}.role", message.get("role"), ("user",))
        if message.get("type", "message") != "message":
            raise invalid_value(f"{param}.type", message["type"], ("message",))
        if "content" not in message:
            raise missing(f"{param}.content")
        content = message["content"]
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            raise invalid_type(
                f"{param}.content", "one of a string or array of objects", content
            )
        for part_index, part in enumerate(content):
            images += _validate_part(part, f"{param}.content[{part_index}]")
    if images > MAX_IMAGES:
        raise APIError(
            f"Invalid 'input': at most {MAX_IMAGES} image parts are allowed, "
            f"but got {images}.",
            param="input",
        )


def _validate_part(part: Any, param: str) -> int:
    """Check one input part; return 1 for an image, else 0."""
    if not isinstance(part, dict):
        raise invalid_type(param, "an object", part)
    kind = part.get("type")
    if kind == "input_text":
        if not isinstance(part.get("text"), str):
            raise missing(f"{param}.text")
        return 0
    if kind != "input_image":
        raise invalid_value(f"{param}.type", kind, ("input_text", "input_image"))
    url = part.get("image_url")
    if not isinstance(url, str):
        raise missing(f"{param}.image_url")
    decode_data_url(url, f"{param}.image_url", image=True)
    if part.get("detail") is not None and part["detail"] not in _DETAILS:
        raise invalid_value(f"{param}.detail", part["detail"], _DETAILS)
    return 1


def _validate_question(question: Any, param: str) -> None:
    """Check one predicate, choice or score question."""
    if not isinstance(question, dict):
        raise invalid_type(param, "an object", question)
    kind = question.get("type")
    if kind not in _QUESTION_TYPES:
        raise invalid_value(f"{param}.type", kind, _QUESTION_TYPES)
    for key in question:
        if key not in _QUESTION_KEYS[kind]:
            raise unknown_parameter(f"{param}.{key}")
    if not isinstance(question.get("instructions"), str):
        raise missing(f"{param}.instructions")
    if "name" in question and not isinstance(question["name"], str):
        raise invalid_type(f"{param}.name", "a string", question["name"])
    if kind == "choice":
        choices = _options(question, "choices", param, 2, None)
        seen: set[tuple[type, Any]] = set()
        for index, choice in enumerate(choices):
            value = choice.get("value")
            if not isinstance(value, str | bool):
                raise invalid_type(
                    f"{param}.choices[{index}].value", "a string or a boolean", value
                )
            if (type(value), value) in seen:
                raise APIError(
                    f"Invalid '{param}.choices[{index}].value': duplicate value.",
                    param=f"{param}.choices[{index}].value",
                )
            seen.add((type(value), value))
    elif kind == "score":
        for index, level in enumerate(_options(question, "levels", param, 2, 10)):
            if not isinstance(level.get("label"), str):
                raise missing(f"{param}.levels[{index}].label")


def _options(
    question: dict[str, Any], key: str, param: str, low: int, high: int | None
) -> list[dict[str, Any]]:
    """Return a question's choices or levels after checking their count and shape."""
    where = f"{param}.{key}"
    options = question.get(key)
    if options is None:
        raise missing(where)
    if not isinstance(options, list):
        raise invalid_type(where, "an array", options)
    if len(options) < low or (high is not None and len(options) > high):
        bound = f"between {low} and {high}" if high else f"at least {low}"
        raise APIError(
            f"Invalid '{where}': expected {bound} items, but got {len(options)}.",
            param=where,
        )
    for index, option in enumerate(options):
        if not isinstance(option, dict):
            raise invalid_type(f"{where}[{index}]", "an object", option)
        if "description" in option and not isinstance(option["description"], str):
            raise invalid_type(
                f"{where}[{index}].description", "a string", option["description"]
            )
    return options


def _input_text(value: Any) -> str:
    """Return all text of the input, lower-cased, for simple matching."""
    if isinstance(value, str):
        return value.lower()
    texts: list[str] = []
    for message in value:
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [part["text"] for part in content if part["type"] == "input_text"]
    return "\n".join(texts).lower()


def predicate_probability(question: str, evidence: str) -> float:
    """Return how likely a yes-or-no question is true, by the evidence.

    The rule: the first state word of the question (see _OPPOSITES) found in
    the evidence makes it LIKELY, its opposite found there UNLIKELY; neither,
    both or a question without one leave it UNSURE.
    """
    seen = set(re.findall(r"[a-z]+", evidence.lower()))
    asked = re.findall(r"[a-z]+", question.lower())
    state = next((word for word in asked if word in _OPPOSITES), None)
    if state is None or (state in seen) == (_OPPOSITES[state] in seen):
        return UNSURE
    return LIKELY if state in seen else UNLIKELY


def _distribution(count: int, preferred: int) -> list[float]:
    """Return probabilities summing to 1 with most weight on one index."""
    rest = (1 - _TOP_PROBABILITY) / (count - 1)
    return [_TOP_PROBABILITY if index == preferred else rest for index in range(count)]


def decide(body: dict[str, Any]) -> dict[str, Any]:
    """Return the `Decision` for a valid request, deterministically.

    A predicate follows the state the input gives (predicate_probability); a
    choice or score prefers the first option whose text appears in the input
    (else the first choice, or the highest level).
    """
    text = _input_text(body["input"])
    answers: list[dict[str, Any]] = []
    for question in body["questions"]:
        answer: dict[str, Any] = {
            "type": question["type"],
            "name": question.get("name"),
        }
        if question["type"] == "predicate":
            answer["probability"] = predicate_probability(
                question["instructions"], text
            )
        elif question["type"] == "choice":
            values = [choice["value"] for choice in question["choices"]]
            preferred = next(
                (i for i, value in enumerate(values) if str(value).lower() in text), 0
            )
            probabilities = _distribution(len(values), preferred)
            answer |= {
                "choice": values[preferred],
                "confidence": probabilities[preferred],
                "probabilities": [
                    {"value": value, "probability": probability}
                    for value, probability in zip(values, probabilities, strict=True)
                ],
            }
        else:
            labels = [level["label"] for level in question["levels"]]
            preferred = next(
                (i for i, label in enumerate(labels) if label.lower() in text),
                len(labels) - 1,
            )
            probabilities = _distribution(len(labels), preferred)
            answer |= {
                "score": sum(i * p for i, p in enumerate(probabilities)),
                "confidence": probabilities[preferred],
                "probabilities": [
                    {"label": label, "value": value, "probability": probability}
                    for value, (label, probability) in enumerate(
                        zip(labels, probabilities, strict=True)
                    )
                ],
            }
        answers.append(answer)
    input_tokens = count_tokens(json.dumps(body["input"])) + count_tokens(
        json.dumps(body["questions"])
    )
    output_tokens = 2 * len(answers)
    return {
        "model": body["model"],
        "answers": answers,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }
