"""Typed readers of what servers answer: untrusted JSON in, typed values out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
import math
from typing import Final

from ..errors import MalformedAnswerError
from ..server_errors.answers import plain
from .shapes import JsonObject

type JSONObject = JsonObject

# Token counts are believed up to this many; a context window from this many.
MAX_TOKENS: Final = 10**9
MIN_WINDOW: Final = 256


def read_object(value: object, part: str) -> JSONObject:
    """Return an object of the answer."""
    if not isinstance(value, dict):
        raise MalformedAnswerError(part=part)
    return value


def read_object_or_empty(value: object, part: str) -> JSONObject:
    """Return an object of the answer; null means an empty one."""
    return {} if value is None else read_object(value, part)


def read_list(value: object, part: str) -> list[object]:
    """Return a list of the answer; null means an empty one."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedAnswerError(part=part)
    return value


def read_optional_string(value: object, part: str) -> str | None:
    """Return a string of the answer, or None when it is null."""
    if value is None or isinstance(value, str):
        return value
    raise MalformedAnswerError(part=part)


def read_string(value: object, part: str) -> str:
    """Return a string of the answer; null means an empty one."""
    return read_optional_string(value, part) or ""


def read_index(value: object, part: str) -> int:
    """Return an index of the answer: an integer, never a boolean."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedAnswerError(part=part)
    return value


def string_or_none(value: object) -> str | None:
    """Return a value that may be a string, where any other is ignored."""
    return value if isinstance(value, str) else None


def read_number(value: object) -> float | None:
    """Return a finite number a server sent (a float may not hold it); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def read_count(value: object) -> int | None:
    """Return a count of tokens a server sent, at most MAX_TOKENS; None for none."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return min(value, MAX_TOKENS)


def read_window(value: object) -> int | None:
    """Return a context window a server named, at least MIN_WINDOW; None for none."""
    count = read_count(value)
    return max(count, MIN_WINDOW) if count else None


def read_usage(usage: Mapping[str, object]) -> JSONObject:
    """Return only the token counts of a Chat Completions `usage`, however large."""
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    cached = prompt.get("cached_tokens") if isinstance(prompt, dict) else None
    reasoning = (
        completion.get("reasoning_tokens") if isinstance(completion, dict) else None
    )
    return {
        "prompt_tokens": read_count(usage.get("prompt_tokens")),
        "completion_tokens": read_count(usage.get("completion_tokens")),
        "total_tokens": read_count(usage.get("total_tokens")),
        "prompt_tokens_details": {"cached_tokens": read_count(cached) or 0},
        "completion_tokens_details": {"reasoning_tokens": read_count(reasoning) or 0},
    }


def error_message(error: object) -> str:
    """Return the message of an error a server sent (its `message`), without markup."""
    return plain(str(error.get("message") if isinstance(error, dict) else error))


@dataclass(slots=True)
class ChoiceDelta:
    """What one first choice of a Chat Completions chunk adds."""

    # The spoken text: the content, or else a refusal.
    text: str | None
    reasoning: str | None
    tool_calls: Sequence[object]
    finish_reason: str | None


def read_choices(chunk: JSONObject) -> list[ChoiceDelta]:
    """Return the deltas of a chunk's first choice (index 0), as often as sent."""
    choices = chunk.get("choices")
    if not choices:
        return []
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise MalformedAnswerError(part="choices")
    return [_choice_delta(choice) for choice in choices if choice.get("index", 0) == 0]


def _choice_delta(choice: JSONObject) -> ChoiceDelta:
    """Return what one choice adds; read for every streamed token, in few calls."""
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        delta = read_object_or_empty(delta, "choices.delta")
    text = delta.get("content")
    if not isinstance(text, str):
        text = string_or_none(delta.get("refusal"))
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    calls = delta.get("tool_calls")
    reason = choice.get("finish_reason")
    return ChoiceDelta(
        text,
        reasoning if isinstance(reasoning, str) else None,
        read_list(calls, "tool_calls") if calls else (),
        read_optional_string(reason, "choices.finish_reason") or None,
    )


@dataclass(slots=True)
class CallFragment:
    """One `tool_calls` fragment of a Chat Completions chunk."""

    index: int | None
    call_id: str | None
    name: str | None
    # A piece of the JSON text, or (from some servers) the decoded object.
    arguments: str | JSONObject | None


def read_call_fragment(value: object) -> CallFragment:
    """Return a tool call fragment; empty strings mean absent."""
    fragment = read_object(value, "tool_calls")
    function = read_object_or_empty(fragment.get("function"), "tool_calls.function")
    call_id = read_optional_string(fragment.get("id"), "tool_calls.id")
    name = read_optional_string(function.get("name"), "tool_calls.function.name")
    arguments = function.get("arguments")
    if not isinstance(arguments, (str, dict, type(None))):
        raise MalformedAnswerError(part="tool_calls.function.arguments")
    index = fragment.get("index")
    return CallFragment(
        index if isinstance(index, int) else None,
        call_id or None,
        name or None,
        arguments,
    )
