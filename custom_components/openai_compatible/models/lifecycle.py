"""Whether a model is still there: in the server's list, and not shut down."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from datetime import date
from fnmatch import translate
from itertools import islice
import re
from types import MappingProxyType
from typing import Any, Final

# From https://developers.openai.com/api/docs/deprecations (2026-12-01); it also
# dates models `/models` no longer shows, whose `shutdown_date` is read first.
OPENAI_SHUTDOWNS: Final[Mapping[str, date]] = MappingProxyType(
    {
        "chatgpt-image-latest": date(2026, 12, 1),
        "gpt-image-1-mini": date(2026, 12, 1),
        "gpt-image-1.5": date(2026, 12, 1),
        "gpt-image-1.5-2025-12-16": date(2026, 12, 1),
        "gpt-5": date(2026, 12, 11),
        "gpt-5-2025-08-07": date(2026, 12, 11),
        "gpt-5-mini": date(2026, 12, 11),
        "gpt-5-mini-2025-08-07": date(2026, 12, 11),
        "gpt-5-nano": date(2026, 12, 11),
        "gpt-5-nano-2025-08-07": date(2026, 12, 11),
    }
)

# OpenAI's `shutdown_date` and OpenRouter's `expiration_date`: YYYY-MM-DD or null.
SHUTDOWN_FIELDS: Final = ("shutdown_date", "expiration_date")

# OpenRouter's routing variants, taken on any model without being listed.
ROUTING_VARIANTS: Final = (":nitro", ":floor", ":exacto", ":online")
# Gemini lists "models/<name>" and takes the bare name.
GEMINI_PREFIX: Final = "models/"
OLLAMA_DEFAULT_TAG: Final = ":latest"
# LiteLLM's wildcard routes are a few; each is matched against each model.
MAX_PATTERNS: Final = 64


@dataclass(frozen=True, slots=True)
class ListedModels:
    """A model list as models are looked up in it: names, and its patterns."""

    names: frozenset[str] = frozenset()
    patterns: re.Pattern[str] | None = None


def listed_models(models: list[str]) -> ListedModels:
    """Return a model list to look up in, its `*` patterns (LiteLLM's) too; executor."""
    patterns = islice((model for model in models if "*" in model), MAX_PATTERNS)
    joined = "|".join(map(translate, patterns))
    return ListedModels(frozenset(models), re.compile(joined) if joined else None)


def listed_shutdown(entry: Mapping[str, Any]) -> date | None:
    """Return the shutdown date a `/models` entry gives its model, if any."""
    for value in map(entry.get, SHUTDOWN_FIELDS):
        if isinstance(value, str):
            with suppress(ValueError):
                return date.fromisoformat(value[:10])
    return None


def lasting_models(models: list[str], shutdowns: Mapping[str, date]) -> list[str]:
    """Return the models with no announced shutdown, or all where none lasts."""
    return [model for model in models if model not in shutdowns] or models


def is_listed(model: str, listed: ListedModels) -> bool:
    """Tell whether a model list holds the model, by a name it may be listed under."""
    names = {model, f"{GEMINI_PREFIX}{model}", model.removeprefix(GEMINI_PREFIX)}
    if ":" not in model:
        names.add(f"{model}{OLLAMA_DEFAULT_TAG}")
    names.update(
        model.removesuffix(variant)
        for variant in ROUTING_VARIANTS
        if model.endswith(variant)
    )
    if not listed.names.isdisjoint(names):
        return True
    return listed.patterns is not None and bool(listed.patterns.match(model))
