"""The thinking switch, as each kind of server takes it in a request."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ..features import saved_choice
from .names import least_reasoning_effort, takes_reasoning_effort
from .server_info import ServerKind


class Thinking(StrEnum):
    """Whether the model thinks before it answers; default: as the server does."""

    DEFAULT = "default"
    ON = "on"
    OFF = "off"


def thinking_setting(value: Any) -> Thinking:
    """Return a saved thinking setting; the server's default when unset or unknown."""
    return saved_choice(Thinking, value, Thinking.DEFAULT)


def thinking_fields(
    setting: Thinking, kind: ServerKind | None, model: str
) -> dict[str, object]:
    """Return the request fields (Chat Completions form) that switch thinking."""
    if setting is Thinking.DEFAULT:
        return {}
    on = setting is Thinking.ON
    if kind in (ServerKind.VLLM, ServerKind.LLAMA_CPP):
        return {"chat_template_kwargs": {"enable_thinking": on}}
    if kind is ServerKind.OLLAMA:
        return {"reasoning_effort": "medium" if on else "none"}
    if takes_reasoning_effort(model):
        return {"reasoning_effort": "medium" if on else least_reasoning_effort(model)}
    return {}
