"""A simulated context window: the prompt counted in tokens, overflows refused.

The simulator counts tokens its own way, roughly like a byte-pair tokenizer
(short words, digit groups and punctuation marks, each with the space before
it), not like the integration's estimate; a request over the window is refused
with the error a real server sends, in that server's words.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .wire import APIError

if TYPE_CHECKING:
    from .settings import OverflowStyle, SimulatorSettings

_TOKEN = re.compile(r" ?[A-Za-z]{1,8}| ?\d{1,3}| ?[^\sA-Za-z\d]|\s+")
# What a chat template adds around each message, and to start the answer.
_MESSAGE_TOKENS = 4
_PRIMING_TOKENS = 3


def count_text(text: str) -> int:
    """Return the number of tokens of a text."""
    return len(_TOKEN.findall(text))


def prompt_tokens(body: dict[str, Any]) -> int:
    """Return the tokens of a request's messages and tools, as a template renders them."""
    total = _PRIMING_TOKENS
    for message in body.get("messages") or ():
        total += _MESSAGE_TOKENS + count_text(_message_text(message))
    if tools := body.get("tools"):
        total += count_text(json.dumps(tools))
    return total


def _message_text(message: Any) -> str:
    """Return the text of a message that a template would render."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        )
    text = content if isinstance(content, str) else ""
    if calls := message.get("tool_calls"):
        text += json.dumps(calls)
    return text


def rendered(body: dict[str, Any], settings: SimulatorSettings) -> dict[str, Any]:
    """Return a chat request as the server's chat template renders it.

    A template that drops system messages (llama-cpp-python's gemma format)
    leaves them out without a word: the model never reads them, and neither
    the window nor the usage counts them.
    """
    if settings.system_messages:
        return body
    messages = [
        message
        for message in body.get("messages") or ()
        if not (isinstance(message, dict) and message.get("role") == "system")
    ]
    return {**body, "messages": messages}


def check(body: dict[str, Any], settings: SimulatorSettings) -> None:
    """Raise the server's overflow error when the request exceeds the window."""
    window = settings.context_window
    if window is None:
        return
    style = settings.overflow_style
    if counted_tokens(body, style) > window:
        raise ContextOverflow(style, window, prompt_tokens(body), _answer_tokens(body))


def counted_tokens(body: dict[str, Any], style: OverflowStyle) -> int:
    """Return the tokens the server holds against its window for a request.

    llama.cpp and LM Studio stop the answer at the window, so only the prompt
    counts; the others add the room asked for the answer.
    """
    prompt = prompt_tokens(body)
    if style in ("llama_cpp", "lm_studio"):
        return prompt
    return prompt + _answer_tokens(body)


def _answer_tokens(body: dict[str, Any]) -> int:
    """Return the room the request asks for the answer."""
    answer = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    # An answer limit that is no number is for validation to refuse.
    return answer if isinstance(answer, int) else 0


class ContextOverflow(APIError):
    """A context overflow, answered in the words of one server."""

    def __init__(
        self, style: OverflowStyle, window: int, prompt: int, answer: int
    ) -> None:
        """Build the error body the server sends."""
        self._payload = _BODIES[style](window, prompt, answer)
        super().__init__(_message(self._payload))

    def body(self) -> dict[str, Any]:
        """Return the server's own error body."""
        return self._payload


def _message(payload: dict[str, Any]) -> str:
    """Return the message of an error body."""
    inner = payload.get("error", payload)
    return str(inner.get("message") if isinstance(inner, dict) else inner)


def _openai(window: int, prompt: int, answer: int) -> dict[str, Any]:
    """Return OpenAI's body."""
    if answer:
        text = (
            f"This model's maximum context length is {window} tokens. However, you "
            f"requested {prompt + answer} tokens ({prompt} in the messages, {answer} "
            "in the completion). Please reduce the length of the messages or "
            "completion."
        )
    else:
        text = (
            f"This model's maximum context length is {window} tokens. However, your "
            f"messages resulted in {prompt} tokens. Please reduce the length of the "
            "messages."
        )
    return {
        "error": {
            "message": text,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _openai_responses(window: int, prompt: int, answer: int) -> dict[str, Any]:
    """Return OpenAI's body on the Responses API: no numbers."""
    return {
        "error": {
            "message": (
                "Your input exceeds the context window of this model. Please "
                "adjust your input and try again."
            ),
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    }


def _vllm(window: int, prompt: int, answer: int) -> dict[str, Any]:
    """Return vLLM's body: no `error` wrapper."""
    if prompt > window or not answer:
        text = (
            f"This model's maximum context length is {window} tokens. However, your "
            f"request has {prompt} input tokens. Please reduce the length of the "
            "input messages."
        )
    else:
        text = (
            f"'max_tokens' or 'max_completion_tokens' is too large: {answer}. This "
            f"model's maximum context length is {window} tokens and your request has "
            f"{prompt} input tokens ({answer} > {window} - {prompt})."
        )
    return {
        "object": "error",
        "message": text,
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }


def _llama_cpp(window: int, prompt: int, answer: int) -> dict[str, Any]:
    """Return llama.cpp server's body, with its token fields."""
    return {
        "error": {
            "code": 400,
            "message": (
                f"request ({prompt} tokens) exceeds the available context size "
                f"({window} tokens), try increasing it"
            ),
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt,
            "n_ctx": window,
        }
    }


def _lm_studio(window: int, prompt: int, answer: int) -> dict[str, Any]:
    """Return LM Studio's body."""
    return {
        "error": (
            f"Trying to keep the first {prompt} tokens when context the overflows. "
            f"However, the model is loaded with context length of only {window} "
            "tokens, which is not enough. Try to load the model with a larger "
            "context length, or provide a shorter input"
        )
    }


def _litellm(window: int, prompt: int, answer: int) -> dict[str, Any]:
    """Return a gateway's rewrap of OpenAI's message."""
    inner = _openai(window, prompt, answer)["error"]["message"]
    return {
        "error": {
            "message": (
                "litellm.ContextWindowExceededError: litellm.BadRequestError: "
                f"ContextWindowExceededError: OpenAIException - {inner}\n"
                "model=local-model. Received Model Group=local-model\n"
                "Available Model Group Fallbacks=None"
            ),
            "type": None,
            "param": None,
            "code": "400",
        }
    }


_BODIES = {
    "openai": _openai,
    "openai_responses": _openai_responses,
    "vllm": _vllm,
    "llama_cpp": _llama_cpp,
    "lm_studio": _lm_studio,
    "litellm": _litellm,
}
