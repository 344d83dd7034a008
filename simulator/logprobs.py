"""Answers with log-probabilities: a label token and its likely alternatives."""

from __future__ import annotations

import math
import re
from typing import Any

from .answer import Answer
from .chat_messages import message_text

_FILLER_TOKENS = ("\n", ".", " ", "The", "I", "It", "**", "Answer", "Sure", ":", '"')


def _labels(text: str) -> list[str]:
    """Guess the answer labels a classification prompt offers."""
    yes = re.search(r"\byes\b", text, re.IGNORECASE)
    if yes and re.search(r"\bno\b", text, re.IGNORECASE):
        first = yes[0]
        return [first, "No" if first[0].isupper() else "no"]
    quoted = list(dict.fromkeys(re.findall(r"[\"'“‘]([\w -]{1,24})[\"'”’]", text)))
    if len(quoted) >= 2:
        return quoted
    letters = list(dict.fromkeys(re.findall(r"(?m)^\s*\(?([A-H])[).:]", text)))
    if len(letters) >= 2:
        return letters
    if span := re.search(r"\b(\d)\s*(?:-|–|to)\s*(\d{1,2})\b", text):
        low, high = int(span[1]), int(span[2])
        if low < high <= 10:
            return [str(value) for value in range(low, high + 1)]
    return []


def _token_entry(token: str, others: list[str], top: int) -> dict[str, Any]:
    """Return a logprobs content entry for a token and its likely alternatives."""
    candidates = [token, f" {token}", token.upper(), token.lower(), token.capitalize()]
    candidates += others + [f" {other}" for other in others] + list(_FILLER_TOKENS)
    top_list = [
        {
            "token": candidate,
            "logprob": -0.05 if rank == 0 else round(-2.0 - 0.75 * rank, 4),
            "bytes": list(candidate.encode()),
        }
        for rank, candidate in enumerate(dict.fromkeys(candidates))
    ][:top]
    return {
        "token": token,
        "logprob": -0.05,
        "bytes": list(token.encode()),
        "top_logprobs": top_list,
    }


def label_enum(response_format: Any) -> list[str] | None:
    """Return the labels a json_schema of one string among them allows, if so."""
    if not isinstance(response_format, dict):
        return None
    schema = (response_format.get("json_schema") or {}).get("schema") or {}
    enum = schema.get("enum") if schema.get("type") == "string" else None
    return [str(label) for label in enum] if enum else None


def enum_label_answer(
    labels: list[str], top: int, *, post_sampling: bool, before_grammar: bool
) -> Answer:
    """Answer a label a grammar holds to an enum of the labels.

    Its alternatives come as llama.cpp gives them after sampling where asked
    (`post_sampling`), else as the model ranked them before the grammar where
    the server reports those (`before_grammar`), else as the grammar holds them.
    """
    answer = _enum_answer(labels, top)
    if post_sampling:
        return _after_sampling(answer)
    return _before_grammar(answer) if before_grammar else answer


def _enum_answer(labels: list[str], top: int) -> Answer:
    """Answer a label held to an enum as a grammar holds it.

    Its opening quote, then the labels alone, then the closing quote.
    """
    quote = _token_entry('"', [], 1)
    tokens = [quote, _token_entry(labels[0], labels[1:], top), quote]
    for entry in tokens[1]["top_logprobs"]:
        if entry["token"] not in labels:
            entry["logprob"] = -30.0
    return Answer("".join(t["token"] for t in tokens), tokens=tokens)


def _before_grammar(answer: Answer) -> Answer:
    """Give the label's alternatives as the model ranked them before the grammar.

    The label chosen under the grammar is far down, and no other label is near.
    """
    _quote, label, _end = answer.tokens or ()
    label["logprob"] = -12.0
    label["top_logprobs"] = _token_entry("The", [], len(label["top_logprobs"]))[
        "top_logprobs"
    ]
    return answer


def _after_sampling(answer: Answer) -> Answer:
    """Give an answer's token alternatives as llama.cpp does after sampling."""
    for entry in answer.tokens or ():
        if "prob" in entry:  # a token that comes twice (the quotes) is one entry
            continue
        entry["prob"] = math.exp(entry.pop("logprob"))
        entry["top_probs"] = [
            {"token": other["token"], "prob": math.exp(other["logprob"])}
            for other in entry.pop("top_logprobs")
        ]
    return answer


def logprob_answer(messages: list[dict[str, Any]], echo: str, top: int) -> Answer:
    """Answer with one label token, or the echo, with logprobs for every token."""
    prompt = "\n".join(
        message_text(m.get("content"))
        for m in messages
        if m["role"] in ("system", "developer", "user")
    )
    if labels := _labels(prompt):
        tokens = [_token_entry(labels[0], labels[1:], top)]
    else:
        words = re.findall(r"\s*\S+", echo)
        tokens = [_token_entry(word, [], top) for word in words]
    return Answer("".join(t["token"] for t in tokens), tokens=tokens)


def filler_answer(top: int) -> Answer:
    """Answer "The" with alternatives that hold no label, as random weights do."""
    return Answer("The", tokens=[_token_entry("The", [], top)])
