"""The chat paths of an evaluation: token log-probabilities, else stated ones.

Log-probabilities: one request per question asks for a one-token label
(Yes/No; a letter per alternative; a digit per level) with ``max_tokens`` 1,
``logprobs`` and ``top_logprobs``. Each label's probability is read from that
token's distribution, case, space and punctuation variants folded together
(" Yes", "YES", "yes."), and renormalised over the labels; a label missing
from the top tokens gets 0.

Stated: the model states a probability per option in a JSON object, asked
through the structured-output ladder (see structured/rungs.py). An answer that does
not fit is asked for once more; one still out of range is read as weights
(negatives as 0) and scaled, as servers such as llama.cpp do not hold a
number to its bounds.
"""

from __future__ import annotations

import math
from typing import Final, TypeGuard, cast

from ..errors import ModelError
from ..models.reports import ServerKind
from ..net.readers import read_number
from ..net.shapes import ChatBody, ChatFields, ChatMessage, JsonObject, JsonSchema
from ..structured.json_answer import StructureMismatch, parse_json_answer
from .questions import Question, probability

TOP_LOGPROBS: Final = 20
# Below this share of the answer on the labels, the model answers none of
# them: their odds among its top tokens (one there, another not) say little,
# and they are read again with the answer held to them.
MIN_LABEL_COVERAGE: Final = 0.5
# An answer held to the labels: its quotes and the label, with room to spare.
HELD_LABEL_TOKENS: Final = 4
# llama.cpp's probabilities after its sampling chain, which then cuts nothing
# (no top-k, top-p or min-p) but what the grammar rules out; a fixed seed, so
# that what comes before the label is the same for the same evidence.
LLAMA_CPP_AFTER_GRAMMAR: Final[ChatFields] = {
    "post_sampling_probs": True,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": 0.0,
    "seed": 0,
}
STATED_TOLERANCE: Final = 0.05
STATED_REPAIR: Final = (
    "Your answer does not fit: give each option a probability, a number from 0 "
    "to 1, the numbers adding up to 1, in a JSON object with only the keys asked "
    "for. Answer again with only the JSON."
)
# Errors of a stated answer that asking once more may mend.
REPAIRABLE: Final = frozenset(
    {
        "evaluate_failed",
        "evaluate_wrong_options",
        "evaluate_probability_out_of_range",
        "evaluate_not_normalized",
    }
)
_PUNCTUATION: Final = ".,:;!?()[]\"'`*"


def logprobs_body(
    model: str, messages: list[ChatMessage], cache_key: str | None
) -> ChatBody:
    """Return the request for a one-token label with its alternatives."""
    body: ChatBody = {
        "model": model,
        "messages": messages,
        "max_tokens": 1,
        # The model's own distribution, not one sharpened by a server default.
        "temperature": 1.0,
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
    }
    if cache_key:
        body["prompt_cache_key"] = cache_key
    return body


def stated_schema(question: Question) -> JsonSchema:
    """Return the JSON schema of stated probabilities for the question."""
    names = question.names
    return {
        "type": "object",
        "properties": {
            name: {"type": "number", "minimum": 0, "maximum": 1} for name in names
        },
        "required": names,
        "additionalProperties": False,
    }


def first_choice(data: JsonObject) -> JsonObject:
    """Return the first choice of a chat completion."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError("no_answer")
    return cast("JsonObject", choices[0])


def top_logprobs(choice: JsonObject) -> dict[str, float] | None:
    """Return the first answer token's alternatives and their log-probabilities.

    None when the server gave no log-probabilities, or only the chosen token's.
    """
    content = _logprob_content(choice)
    return _alternatives(content[0]) if content else None


def held_label_masses(choice: JsonObject, labels: list[str]) -> dict[str, float] | None:
    """Return the labels' masses at the first token of an answer held to them.

    The answer is a JSON string, so the label comes after its opening quote;
    None when no token's alternatives hold a label.
    """
    for entry in _logprob_content(choice) or ():
        top = _alternatives(entry)
        if top and sum((masses := label_masses(top, labels)).values()) > 0:
            return masses
    return None


def held_to_labels(
    body: ChatBody, labels: list[str], kind: ServerKind | None = None
) -> ChatBody:
    """Return the label request again, its answer held to the labels by a schema.

    A server's grammar then leaves the model only the labels to choose from,
    in their own relative odds, where they were not among its favourites.
    llama.cpp reports the model's odds before its grammar unless asked for
    those after sampling, with nothing cut but the grammar.
    """
    after_grammar: ChatFields = (
        LLAMA_CPP_AFTER_GRAMMAR if kind is ServerKind.LLAMA_CPP else {}
    )
    return {
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


def _logprob_content(choice: JsonObject) -> list[object] | None:
    """Return the per-token log-probabilities of an answer, if any."""
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return content if isinstance(content, list) and content else None


def _alternatives(first: object) -> dict[str, float] | None:
    """Return one token's alternatives and their log-probabilities, if it has any.

    OpenAI's form (`top_logprobs`, each with a `logprob`) or llama.cpp's after
    its sampling (`top_probs`, each with a `prob`).
    """
    if not isinstance(first, dict):
        return None
    alternatives = first.get("top_logprobs") or first.get("top_probs")
    if not isinstance(alternatives, list) or not alternatives:
        return None
    top: dict[str, float] = {}
    for entry in [*alternatives, first]:
        if isinstance(entry, dict) and (found := _logprob(entry)) is not None:
            top.setdefault(*found)
    return top


def _logprob(entry: JsonObject) -> tuple[str, float] | None:
    """Return an alternative's token and log-probability, if it states them."""
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


def stated_answer(choice: JsonObject, question: Question) -> dict[str, float]:
    """Return the stated probability per option name, checked one by one."""
    value = _stated_values(choice, question)
    return {name: probability(value[name], question) for name in question.names}


def stated_weights(choice: JsonObject, question: Question) -> list[float] | None:
    """Return stated numbers read as weights, scaled to add up to 1.

    For an answer that stays out of range when asked again: a number below 0
    (a huge negative exponent reads as minus infinity) counts as 0. None when
    a value is no number, is infinite, or all are 0.
    """
    try:
        value = _stated_values(choice, question)
    except ModelError:
        return None
    numbers = [n for name in question.names if _is_number(n := value[name])]
    if len(numbers) < len(question.names):
        return None
    weights = [max(float(number), 0.0) for number in numbers]
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
    """Return the JSON object of a stated answer, holding exactly the options."""
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


def _is_number(value: object) -> TypeGuard[float]:
    """Tell whether a JSON value is a number a float holds, minus infinity too."""
    return read_number(value) is not None or value == -math.inf
