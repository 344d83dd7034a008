"""What a model's name tells of the request fields it takes; the thinking switch."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final

from .server_info import ServerKind


def _base_name(model: str) -> str:
    return model.lower().rsplit("/", 1)[-1]


def is_reasoning_model(model: str) -> bool:
    """Tell whether a model is one of OpenAI's reasoning models, by its name."""
    name = _base_name(model)
    # gpt-5-chat is the non-reasoning chat variant of the family.
    return name.startswith(("o1", "o3", "o4", "gpt-5")) and not name.startswith(
        "gpt-5-chat"
    )


def takes_reasoning_effort(model: str) -> bool:
    """Tell whether a model takes a reasoning effort, by its name."""
    return is_reasoning_model(model) or _base_name(model).startswith("gpt-oss")


def takes_verbosity(model: str) -> bool:
    """Tell whether a model takes a verbosity (the GPT-5 reasoning family)."""
    return is_reasoning_model(model) and _base_name(model).startswith("gpt-5")


# OpenAI's service tiers by family; "auto" follows the project's setting.
_PRIORITY_FAMILIES: Final = ("gpt-5", "gpt-4.1", "gpt-4o", "o3", "o4-mini")
_FLEX_FAMILIES: Final = ("gpt-5", "o3", "o4-mini")
# Variants processed at standard speed and price only.
_STANDARD_ONLY: Final = ("-chat", "-pro", "deep-research", "o3-mini", "codex-mini")
_NO_FLEX: Final = ("-codex", "gpt-5.3")


def service_tiers(model: str) -> tuple[str, ...]:
    """Return the service tiers an OpenAI model takes, by its name; () if none."""
    name = _base_name(model)
    if not name.startswith(_PRIORITY_FAMILIES) or any(
        variant in name for variant in _STANDARD_ONLY
    ):
        return ()
    tiers = ["auto"]
    if name.startswith(_FLEX_FAMILIES) and not any(part in name for part in _NO_FLEX):
        tiers.append("flex")
    tiers.append("default")
    if not name.startswith("gpt-5-nano"):
        tiers.append("priority")
    return tuple(tiers)


class Thinking(StrEnum):
    """Whether the model thinks before it answers; default: as the server does."""

    DEFAULT = "default"
    ON = "on"
    OFF = "off"


def thinking_setting(value: Any) -> Thinking:
    """Return a saved thinking setting; the server's default when unset or unknown."""
    return Thinking(value) if value in Thinking else Thinking.DEFAULT


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
        # Off is the least effort the model takes: GPT-5's minimal, else low.
        least = "minimal" if takes_verbosity(model) else "low"
        return {"reasoning_effort": "medium" if on else least}
    return {}
