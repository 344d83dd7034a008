"""The stated path of an evaluation: a probability per option, stated as JSON."""

from __future__ import annotations

import math
from typing import Final, cast

from ..const import LOGGER
from ..errors import ModelError, RequestRejectedError
from ..net.shapes import ChatBody, JsonObject, JsonSchema
from ..structured.rungs import (
    RUNG_NAMES,
    StructuredRequest,
    StructureMismatch,
    async_climb,
    parse_json_answer,
)
from .questions import Ask, Outcome, Question, finite, normalised, probability

STATED_TOLERANCE: Final = 0.05
STATED_REPAIR: Final = (
    "Your answer does not fit: give each option a probability, a number from 0 "
    "to 1, the numbers adding up to 1, in a JSON object with only the keys asked "
    "for. Answer again with only the JSON."
)
REPAIRABLE: Final = frozenset(
    {
        "evaluate_failed",
        "evaluate_wrong_options",
        "evaluate_probability_out_of_range",
        "evaluate_not_normalized",
    }
)


async def async_state(ask: Ask, question: Question) -> Outcome:
    """Ask the model to state a probability per option, as JSON."""
    schema: JsonSchema = {
        "type": "object",
        "properties": {
            name: {"type": "number", "minimum": 0, "maximum": 1}
            for name in question.names
        },
        "required": question.names,
        "additionalProperties": False,
    }

    async def attempt(request: StructuredRequest) -> JsonObject:
        return await ask.async_choice(_body(ask, question, request))

    def on_rejected(request: StructuredRequest, err: RequestRejectedError) -> None:
        rung = RUNG_NAMES[request.rung]
        ask.skip(question, f"stated: {rung} refused: {err.server_message}")

    request, choice = await async_climb(
        ask.capabilities, "evaluation", schema, attempt, on_rejected
    )
    extra = {"format": RUNG_NAMES[request.rung]}
    try:
        return _outcome(question, choice, extra)
    except ModelError as err:
        if err.translation_key not in REPAIRABLE:
            raise
        LOGGER.debug("Asking again for the probabilities: %s", err)
    answer = stated_text(choice, question)
    choice = await ask.async_choice(_body(ask, question, request, answer))
    extra["repaired"] = "asked again"
    try:
        return _outcome(question, choice, extra)
    except ModelError as err:
        if (
            err.translation_key not in REPAIRABLE
            or (weights := stated_weights(choice, question)) is None
        ):
            raise
    # Still out of range: the numbers are weights, a negative one none.
    extra["repaired"] = "read as weights"
    raw = dict(zip(question.names, weights, strict=True))
    return Outcome(weights, "stated", raw, extra)


def _prompt(question: Question) -> str:
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
        f"{head}{question.levels()}\n\nState how likely each level is, "
        f"{ask} with the number of each level as its key."
    )


def _body(
    ask: Ask, question: Question, request: StructuredRequest, answer: str = ""
) -> ChatBody:
    """Return the request on one rung of the ladder; with a misfit `answer`, once more."""
    prompt = _prompt(question)
    if request.instructions:
        prompt = f"{prompt}\n\n{request.instructions}"
    messages = ask.messages(prompt)
    if answer:
        messages += [
            {"role": "assistant", "content": answer},
            {"role": "user", "content": STATED_REPAIR},
        ]
    body: JsonObject = {
        "model": ask.settings.model,
        "messages": messages,
        **ask.settings.body(),
    }
    if request.response_format:
        body["response_format"] = request.response_format
    return cast("ChatBody", body)


def _outcome(question: Question, choice: JsonObject, extra: dict[str, str]) -> Outcome:
    value = _stated_values(choice, question)
    stated = {name: probability(value[name], question) for name in question.names}
    probabilities = normalised(
        question, [stated[n] for n in question.names], STATED_TOLERANCE
    )
    return Outcome(probabilities, "stated", stated, dict(extra))


def stated_weights(choice: JsonObject, question: Question) -> list[float] | None:
    """Return the numbers as weights (below 0: none) scaled to 1; servers skip bounds."""
    try:
        value = _stated_values(choice, question)
    except ModelError:
        return None
    numbers = [value[name] for name in question.names]
    if not all(finite(n) or n == -math.inf for n in numbers):
        return None
    weights = [float(max(n, 0.0)) if finite(n) else 0.0 for n in numbers]
    total = sum(weights)
    if not math.isfinite(total) or total <= 0:
        return None
    return [weight / total for weight in weights]


def stated_text(choice: JsonObject, question: Question) -> str:
    """Return the text of a stated answer; refuse a refusal or no answer."""
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    text = message.get("content")
    if not isinstance(text, str) or not text.strip():
        if message.get("refusal"):
            raise ModelError("evaluate_refused", question=question.key)
        raise ModelError("no_answer")
    return text


def _stated_values(choice: JsonObject, question: Question) -> JsonObject:
    try:
        value = parse_json_answer(stated_text(choice, question))
    except StructureMismatch as err:
        raise ModelError("evaluate_failed", problem=err.problem) from err
    if not isinstance(value, dict):
        raise ModelError(
            "evaluate_failed", problem="the stated probabilities are not a JSON object"
        )
    if set(value) != set(question.names):
        raise ModelError("evaluate_wrong_options", question=question.key)
    return value
