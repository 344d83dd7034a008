"""Whether a model is still there: in the server's list, and not shut down.

Part of the capability model (capabilities.py): the dated shutdowns a hosted
provider announced, the shutdown date a server writes in its `/models` entry,
and whether a model list holds a model under any name the server takes for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from fnmatch import translate
from itertools import islice
import re
from types import MappingProxyType
from typing import Any, Final

# OpenAI's announced shutdowns, from the "Upcoming deprecations" table of
# https://developers.openai.com/api/docs/deprecations as read on 2026-12-01.
# OpenAI's `/models` entries carry the same date in `shutdown_date`, which is
# read first; the table also dates a model that the list no longer shows.
OPENAI_SHUTDOWNS: Final[Mapping[str, date]] = MappingProxyType(
    {
        # Image models, announced on 2026-06-02.
        "chatgpt-image-latest": date(2026, 12, 1),
        "gpt-image-1-mini": date(2026, 12, 1),
        "gpt-image-1.5": date(2026, 12, 1),
        "gpt-image-1.5-2025-12-16": date(2026, 12, 1),
        # The GPT-5 family, announced on 2026-06-11.
        "gpt-5": date(2026, 12, 11),
        "gpt-5-2025-08-07": date(2026, 12, 11),
        "gpt-5-mini": date(2026, 12, 11),
        "gpt-5-mini-2025-08-07": date(2026, 12, 11),
        "gpt-5-nano": date(2026, 12, 11),
        "gpt-5-nano-2025-08-07": date(2026, 12, 11),
    }
)

# Fields of a `/models` entry that date the model's shutdown, YYYY-MM-DD or
# null: OpenAI's `shutdown_date` (its List models reference) and OpenRouter's
# `expiration_date` (its Models API reference).
SHUTDOWN_FIELDS: Final = ("shutdown_date", "expiration_date")

# Suffixes OpenRouter takes on any model without listing them: its routing
# variants (https://openrouter.ai/docs/guides/routing/model-variants/overview).
ROUTING_VARIANTS: Final = (":nitro", ":floor", ":exacto", ":online")
# Gemini lists "models/<name>" and takes the bare name (Google's OpenAI
# compatibility reference: a name without a slash gets the prefix).
GEMINI_PREFIX: Final = "models/"
# Ollama lists "<name>:latest" and takes the bare name for it.
OLLAMA_DEFAULT_TAG: Final = ":latest"
# Listed patterns with `*` that count: LiteLLM's wildcard routes are a few; a
# list of thousands would be matched one by one against each model setting.
MAX_PATTERNS: Final = 64


@dataclass(frozen=True, slots=True)
class ListedModels:
    """A model list as models are looked up in it: names, and its patterns."""

    names: frozenset[str] = frozenset()
    patterns: re.Pattern[str] | None = None


def listed_models(models: list[str]) -> ListedModels:
    """Return a model list to look up in; run in the executor, once per list.

    A listed pattern with `*` holds every model it matches: LiteLLM lists its
    wildcard routes ("openai/*", "*") as they are configured. The first
    MAX_PATTERNS of them count.
    """
    patterns = islice((model for model in models if "*" in model), MAX_PATTERNS)
    joined = "|".join(map(translate, patterns))
    return ListedModels(frozenset(models), re.compile(joined) if joined else None)


def listed_shutdown(entry: Mapping[str, Any]) -> date | None:
    """Return the shutdown date a `/models` entry gives its model, if any."""
    for key in SHUTDOWN_FIELDS:
        value = entry.get(key)
        if not isinstance(value, str):
            continue
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            continue
    return None


def lasting_models(models: list[str], shutdowns: Mapping[str, date]) -> list[str]:
    """Return the models with no announced shutdown; all of them if none lasts.

    A new agent or task should not start on a model that is about to go.
    """
    return [model for model in models if model not in shutdowns] or models


def _names(model: str) -> set[str]:
    """Return the names a server may list a model under."""
    names = {model, f"{GEMINI_PREFIX}{model}", model.removeprefix(GEMINI_PREFIX)}
    if ":" not in model:
        names.add(f"{model}{OLLAMA_DEFAULT_TAG}")
    names.update(
        model.removesuffix(variant)
        for variant in ROUTING_VARIANTS
        if model.endswith(variant)
    )
    return names


def is_listed(model: str, listed: ListedModels) -> bool:
    """Tell whether a model list holds the model, by a name or a pattern."""
    if not listed.names.isdisjoint(_names(model)):
        return True
    return listed.patterns is not None and bool(listed.patterns.match(model))
