"""An evaluation's chat paths, per question: a one-token label's odds, else stated JSON."""

from __future__ import annotations

import math
from typing import Final, cast

from ..const import LOGGER, Feature
from ..errors import ModelError, RequestRejectedError
from ..models.server_info import ServerKind
from ..net.readers import read_number
from ..net.shapes import ChatBody, ChatFields, JsonObject, JsonSchema
from ..structured.rungs import (
    RUNG_NAMES,
    StructuredRequest,
    StructureMismatch,
    async_climb,
    parse_json_answer,
)
from .evaluation import Ask, Outcome, Question, normalised, probability

TOP_LOGPROBS: Final = 20
# Below this share on the labels, their odds say little: ask again, held to them.
MIN_LABEL_COVERAGE: Final = 0.5
# An answer held to the labels: its quotes and the label, with room to spare.
HELD_LABEL_TOKENS: Final = 4
# llama.cpp's odds after sampling that cuts only what the grammar bars; seed fixed so
# that what comes before the label stays the same.
LLAMA_CPP_AFTER_GRAMMAR: Final[ChatFields] = {
    "post_sampling_probs": True,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": 0.0,
    "seed": 0,
}
_PUNCTUATION: Final = ".,:;!?()[]\"'`*"
STATED_TOLERANCE: Final = 0.05
STATED_REPAIR: Final = (
    "Your answer does not fit: give each option a probability, a number from 0 "
    "to 1, the numbers adding up to 1, in a JSON object with only the keys asked "
    "for. Answer again with only the JSON."
)
# Not asked again: the model refused, or said nothing.
FINAL: Final = frozenset({"evaluate_refused", "no_answer"})


async def async_answer(ask: Ask, question: Question) -> Outcome:
    """Answer with the labels' odds where they can tell, else as stated."""
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


def _label_prompt(question: Question, labels: list[str]) -> str:
    head = f"Question: {question.instructions}\n\n"
    if question.kind == "noul":
        return f"{head}Answer Yes or No."
    if question.kind == "score":
        return (
            f"{head}{question.levels()}\n\nAnswer with the number of the level "
            f"only, from 0 to {len(labels) - 1}."
        )
    lines = "\n".join(
        f"{label}) {name}: {description}"
        for label, (name, description) in zip(labels, question.options, strict=True)
    )
    return f"{head}Options:\n{lines}\n\nAnswer with the letter of the option only."


async def async_read_labels(
    ask: Ask, question: Question, labels: list[str]
) -> Outcome | None:
    """Read the label distribution of a one-token answer; None to fall back."""
    body: ChatBody = {
        "model": ask.settings.model,
        "messages": ask.messages(_label_prompt(question, labels)),
        "max_tokens": 1,
        # The model's own distribution, not one sharpened by a server default.
        "temperature": 1.0,
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
    }
    if ask.settings.prompt_cache_key:
        body["prompt_cache_key"] = ask.settings.prompt_cache_key
    try:
        choice = await ask.async_choice(body)
    except RequestRejectedError as err:
        # Else about this request (the context, an attachment), not logprobs.
        if err.feature is Feature.LOGPROBS and err.general:
            ask.capabilities.learn_refused(Feature.LOGPROBS, err.lesson_source)
        ask.skip(question, f"logprobs: refused: {err.server_message}")
        return None
    if (top := next(iter(_token_alternatives(choice)), None)) is None:
        ask.capabilities.learn_refused(Feature.LOGPROBS, "the server returned none")
        ask.skip(question, "logprobs: the server returned none")
        return None
    ask.capabilities.learn_proven(Feature.LOGPROBS)
    raw = label_masses(top, labels)
    extra: dict[str, object] = {}
    if sum(raw.values()) < MIN_LABEL_COVERAGE:
        ask.skip(
            question,
            "logprobs: the labels are not what the model answers "
            f"({', '.join(repr(token) for token in list(top)[:5])})",
        )
        held = await _async_held(ask, question, body, labels)
        if held is None and not any(raw.values()):
            return None
        if held is not None:
            raw, extra["held to the labels"] = held, True
    coverage = sum(raw.values())
    probabilities = [raw[label] / coverage for label in labels]
    return Outcome(probabilities, "logprobs", raw, {"coverage": coverage, **extra})


async def _async_held(
    ask: Ask, question: Question, body: ChatBody, labels: list[str]
) -> dict[str, float] | None:
    """Ask again, the answer held to the labels by a schema; None if it tells nothing."""
    if ask.capabilities.refuses(Feature.JSON_SCHEMA):
        return None
    # The grammar leaves only the labels, in their own odds (llama.cpp: after sampling).
    llama_cpp = ask.capabilities.kind is ServerKind.LLAMA_CPP
    after_grammar: ChatFields = LLAMA_CPP_AFTER_GRAMMAR if llama_cpp else {}
    schema: JsonSchema = {"type": "string", "enum": labels}
    held: ChatBody = {
        **body,
        **after_grammar,
        "max_tokens": HELD_LABEL_TOKENS,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "label", "schema": schema},
        },
    }
    try:
        choice = await ask.async_choice(held)
    except RequestRejectedError as err:
        # Not asked again: the schema it holds the labels by is refused.
        ask.capabilities.learn_refused(Feature.JSON_SCHEMA, err.lesson_source)
        ask.skip(
            question, f"logprobs held to the labels: refused: {err.server_message}"
        )
        return None
    # The answer is a JSON string: the label comes after its opening quote.
    for top in _token_alternatives(choice):
        if top and sum((masses := label_masses(top, labels)).values()) > 0:
            return masses
    ask.skip(question, "logprobs held to the labels: none")
    return None


def _token_alternatives(choice: JsonObject) -> list[dict[str, float] | None]:
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return [_alternatives(e) for e in content] if isinstance(content, list) else []


def _alternatives(first: object) -> dict[str, float] | None:
    """Return one token's alternatives and log-probabilities (OpenAI's or llama.cpp's)."""
    alternatives = isinstance(first, dict) and (
        first.get("top_logprobs") or first.get("top_probs")
    )
    if not isinstance(alternatives, list) or not alternatives:
        return None
    top: dict[str, float] = {}
    for entry in [*alternatives, first]:
        # The one place a log-probability is read: llama.cpp may give a probability.
        if not isinstance(entry, dict):
            continue
        token, logprob = entry.get("token"), read_number(entry.get("logprob"))
        if (prob := read_number(entry.get("prob"))) is not None and prob > 0:
            logprob = math.log(prob)
        if isinstance(token, str) and logprob is not None:
            top.setdefault(token, min(logprob, 0.0))
    return top


def fold(token: str) -> str:
    """Return the label a token spells, whatever its case, spaces or punctuation."""
    return token.strip().strip(_PUNCTUATION).strip().casefold()


def label_masses(top: dict[str, float], labels: list[str]) -> dict[str, float]:
    """Return the probability of each label, adding up the tokens that spell it."""
    masses = dict.fromkeys(labels, 0.0)
    by_folded = {fold(label): label for label in labels}
    for token, logprob in top.items():
        if (label := by_folded.get(fold(token))) is not None:
            masses[label] += math.exp(logprob)
    return masses


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
        try:
            return await ask.async_choice(_body(ask, question, request))
        except RequestRejectedError as err:
            # Shown only if a lower rung answers: else the evaluation fails.
            rung = RUNG_NAMES[request.rung]
            ask.skip(question, f"stated: {rung} refused: {err.server_message}")
            raise

    request, choice = await async_climb(ask.capabilities, "evaluation", schema, attempt)
    extra = {"format": RUNG_NAMES[request.rung]}
    try:
        return _outcome(question, choice, extra)
    except ModelError as err:
        if err.translation_key in FINAL:
            raise
        LOGGER.debug("Asking again for the probabilities: %s", err)
    answer = stated_text(choice, question)
    choice = await ask.async_choice(_body(ask, question, request, answer))
    extra["repaired"] = "asked again"
    try:
        return _outcome(question, choice, extra)
    except ModelError as err:
        if err.translation_key in FINAL or not (
            weights := stated_weights(choice, question)
        ):
            raise
    # Still out of range: the numbers are weights, a negative one none.
    extra["repaired"] = "read as weights"
    raw = dict(zip(question.names, weights, strict=True))
    return Outcome(weights, "stated", raw, extra)


def _stated_prompt(question: Question) -> str:
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
    prompt = _stated_prompt(question)
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
    probabilities = normalised(question, list(stated.values()), STATED_TOLERANCE)
    return Outcome(probabilities, "stated", stated, dict(extra))


def stated_weights(choice: JsonObject, question: Question) -> list[float] | None:
    """Return the numbers as weights (below 0: none) scaled to 1; servers skip bounds."""
    try:
        value = _stated_values(choice, question)
    except ModelError:
        return None
    numbers = [value[name] for name in question.names]
    if not all(read_number(n) is not None or n == -math.inf for n in numbers):
        return None
    weights = [
        max(x, 0.0) if (x := read_number(n)) is not None else 0.0 for n in numbers
    ]
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
        raise ModelError("evaluate_failed", problem=str(err)) from err
    if not isinstance(value, dict):
        raise ModelError(
            "evaluate_failed", problem="the stated probabilities are not a JSON object"
        )
    if set(value) != set(question.names):
        raise ModelError("evaluate_wrong_options", question=question.key)
    return value
