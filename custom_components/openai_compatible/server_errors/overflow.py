"""Context-overflow errors read: the window a server names, the prompt it counted."""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Any


@dataclass(frozen=True, slots=True)
class Overflow:
    """What a server's context-overflow error says, as far as it says it."""

    window: int | None = None
    prompt_tokens: int | None = None


MAX_FIGURE_DIGITS = 9


def _patterns(*texts: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(text, re.IGNORECASE) for text in texts)


_WINDOW = _patterns(
    # OpenAI, vLLM, DeepSeek, Groq; llama.cpp; LM Studio; Mistral; Gemini; Anthropic; TGI.
    r"maximum context length is (\d+)",
    r"available context size \((\d+) tokens?\)",
    r"context length of only (\d+)",
    r"with (\d+) maximum context length",
    r"maximum number of tokens allowed \((\d+)\)",
    r"tokens > (\d+) maximum",
    r"max_new_tokens` must be <= (\d+)",
)
_PROMPT = _patterns(
    r"your messages resulted in (\d+) tokens",
    r"\((\d+) in the messages",
    r"your request has (\d+) input tokens",
    r"request \((\d+) tokens\) exceeds",
    r"keep the first (\d+) tokens",
    r"prompt contains (\d+) tokens",
    r"input token count \((\d+)\)",
    r"prompt is too long: (\d+) tokens",
    r"given: (\d+) `inputs` tokens",
)
_OVERFLOW_WORDS = re.compile(
    r"context_length_exceeded|exceed_context_size|context (?:length|window|size)"
    r"|(?:prompt|input) is too long|too many tokens|reduce the length of the messages"
)


def parse_overflow(message: str, body: Any = None) -> Overflow | None:
    """Return what a context-overflow error says; None for any other error."""
    details = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(details, dict):
        details = {}
    window = _first_number(_WINDOW, message) or _positive(details.get("n_ctx"))
    prompt = _first_number(_PROMPT, message) or _positive(
        details.get("n_prompt_tokens")
    )
    if window is None and prompt is None:
        words = f"{message} {details.get('code')} {details.get('type')}".lower()
        if not _OVERFLOW_WORDS.search(words):
            return None
    return Overflow(window, prompt)


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    """Return the first matching pattern's number; a figure longer than a count is none."""
    for pattern in patterns:
        if (match := pattern.search(text)) and len(match[1]) <= MAX_FIGURE_DIGITS:
            return int(match[1])
    return None


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None
