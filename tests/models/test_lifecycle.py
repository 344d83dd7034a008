"""Whether a model list holds a model, and the shutdown dates servers give."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from custom_components.openai_compatible.models.lifecycle import (
    MAX_PATTERNS,
    is_listed,
    listed_models,
    listed_shutdown,
)


@pytest.mark.parametrize(
    ("model", "listed", "expected"),
    [
        ("gpt-4o-mini", ["gpt-4o-mini", "gpt-5"], True),
        ("gpt-4o", ["gpt-4o-mini"], False),
        # Gemini lists "models/<name>" and takes the bare name, and the other way.
        ("gemini-2.5-flash", ["models/gemini-2.5-flash"], True),
        ("models/gemini-2.5-flash", ["gemini-2.5-flash"], True),
        ("gemini-2.5-pro", ["models/gemini-2.5-flash"], False),
        # Ollama lists the default tag; a bare name means it.
        ("llama3.2", ["llama3.2:latest"], True),
        ("llama3.2:1b", ["llama3.2:latest", "llama3.2:3b"], False),
        # OpenRouter's routing variants are taken on any listed model.
        ("openai/gpt-5:nitro", ["openai/gpt-5"], True),
        ("openai/gpt-5:floor", ["openai/gpt-5"], True),
        ("openai/gpt-5:exacto", ["openai/gpt-5"], True),
        ("openai/gpt-5:online", ["openai/gpt-5"], True),
        ("openai/gpt-5:nitro", ["openai/gpt-4o"], False),
        # Catalog variants are listed on their own.
        ("openai/gpt-5:free", ["openai/gpt-5"], False),
        # LiteLLM lists its wildcard routes as configured.
        ("openai/gpt-5", ["openai/*"], True),
        ("anthropic/claude", ["openai/*"], False),
        ("anything", ["*"], True),
        ("gpt-5", [], False),
    ],
)
def test_is_listed(model: str, listed: list[str], expected: bool) -> None:
    """A model counts as listed under any name the server takes for it."""
    assert is_listed(model, listed_models(listed)) is expected


def test_only_the_first_patterns_count() -> None:
    """A list of many patterns is matched by its first MAX_PATTERNS only."""
    patterns = [f"{index}/*" for index in range(MAX_PATTERNS + 1)]
    listed = listed_models(patterns)
    assert is_listed(f"{MAX_PATTERNS - 1}/model", listed)
    assert not is_listed(f"{MAX_PATTERNS}/model", listed)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        # OpenAI's List models entry.
        ({"id": "gpt-5", "shutdown_date": "2026-12-11"}, date(2026, 12, 11)),
        ({"id": "gpt-5.1", "shutdown_date": None}, None),
        # OpenRouter's Models API entry, also with a time of day.
        ({"id": "x/y", "expiration_date": "2026-11-08"}, date(2026, 11, 8)),
        ({"id": "x/y", "expiration_date": "2026-11-08T00:00:00Z"}, date(2026, 11, 8)),
        ({"id": "x/y", "expiration_date": None}, None),
        # Whatever else is no date.
        ({"id": "x", "shutdown_date": "soon"}, None),
        ({"id": "x", "shutdown_date": 1_790_000_000}, None),
        # A field that is no date leaves the next one to say.
        (
            {"id": "x", "shutdown_date": "bad", "expiration_date": "2027-01-14"},
            date(2027, 1, 14),
        ),
        ({"id": "x"}, None),
    ],
)
def test_listed_shutdown(entry: dict[str, Any], expected: date | None) -> None:
    """A `/models` entry's shutdown date is read where it is a date."""
    assert listed_shutdown(entry) == expected
