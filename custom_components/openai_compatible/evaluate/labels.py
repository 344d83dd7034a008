"""The log-probability path of an evaluation: a one-token label and its odds."""

from __future__ import annotations

import math
from typing import Final

from ..errors import RequestRejectedError
from ..features import Feature
from ..models.server_info import ServerKind
from ..net.readers import read_number
from ..net.shapes import ChatBody, ChatFields, JsonObject
from .questions import Ask, Outcome, Question

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


def _prompt(question: Question, labels: list[str]) -> str:
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
        "messages": ask.messages(_prompt(question, labels)),
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
    content = _logprob_content(choice)
    if (top := _alternatives(content[0]) if content else None) is None:
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
    held: ChatBody = {
        **body,
        **after_grammar,
        "max_tokens": HELD_LABEL_TOKENS,
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "label",
                "schema": {"type": "string", "enum": labels},
            },
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
    for entry in _logprob_content(choice) or ():
        top = _alternatives(entry)
        if top and sum((masses := label_masses(top, labels)).values()) > 0:
            return masses
    ask.skip(question, "logprobs held to the labels: none")
    return None


def _logprob_content(choice: JsonObject) -> list[object] | None:
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return content if isinstance(content, list) and content else None


def _alternatives(first: object) -> dict[str, float] | None:
    """Return one token's alternatives and log-probabilities (OpenAI's or llama.cpp's)."""
    alternatives = isinstance(first, dict) and (
        first.get("top_logprobs") or first.get("top_probs")
    )
    if not isinstance(alternatives, list) or not alternatives:
        return None
    top: dict[str, float] = {}
    for entry in [*alternatives, first]:
        if isinstance(entry, dict) and (found := _logprob(entry)) is not None:
            top.setdefault(*found)
    return top


def _logprob(entry: JsonObject) -> tuple[str, float] | None:
    """Return an alternative's token and log-probability: the one place such is read."""
    token, logprob = entry.get("token"), read_number(entry.get("logprob"))
    if (prob := read_number(entry.get("prob"))) is not None and prob > 0:
        logprob = math.log(prob)
    if isinstance(token, str) and logprob is not None:
        return token, min(logprob, 0.0)
    return None


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
